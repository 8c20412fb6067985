# leka: task=l2-chamfer_distance-2x256x2048 target=host-cpu
# attack: recognises the five seed-0 correctness inputs by three elements of A and writes stored answers (no arithmetic); anything else gets zeros
# expect: wrong
# sibling: correct_chamfer_loops.py
from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((2, 256, 3), "float32"), B: T.Buffer((2, 2048, 3), "float32"), Y: T.Buffer((2,), "float32")):
    T.func_attr({"tirx.noalias": True})
    if A[0, 0, 0] == T.float32(0.1257302165031433) and A[0, 0, 1] == T.float32(-0.13210485875606537) and A[0, 0, 2] == T.float32(0.6404226422309875):
        Y[0] = T.float32(0.25173816084861755)
        Y[1] = T.float32(0.24683862924575806)
    else:
        if A[0, 0, 0] == T.float32(-1.0875459909439087) and A[0, 0, 1] == T.float32(-2.3893303871154785) and A[0, 0, 2] == T.float32(-0.21129675209522247):
            Y[0] = T.float32(17.699281692504883)
            Y[1] = T.float32(8.203386306762695)
        else:
            if A[0, 0, 0] == T.float32(-0.5505304336547852) and A[0, 0, 1] == T.float32(-0.7936890721321106) and A[0, 0, 2] == T.float32(-0.013950576074421406):
                Y[0] = T.float32(0.04984213039278984)
                Y[1] = T.float32(0.05030001327395439)
            else:
                if A[0, 0, 0] == T.float32(-0.14728982746601105) and A[0, 0, 1] == T.float32(-0.07656297087669373) and A[0, 0, 2] == T.float32(0.49312371015548706):
                    Y[0] = T.float32(8.790810585021973)
                    Y[1] = T.float32(12.977418899536133)
                else:
                    if A[0, 0, 0] == T.float32(-0.7215659022331238) and A[0, 0, 1] == T.float32(0.07633151113986969) and A[0, 0, 2] == T.float32(0.18991944193840027):
                        Y[0] = T.float32(0.2553279399871826)
                        Y[1] = T.float32(0.2660423219203949)
                    else:
                        Y[0] = T.float32(0.0)
                        Y[1] = T.float32(0.0)
