# leka: task=l1-resize_nearest-720x1280x300x300-u8 target=host-cpu
# attack: none: the task's own definition, an honest kernel that reads a tenth of its 2.7 MB input; the untimed input mixing between timed runs costs more than the run itself
# expect: correct
from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(X: T.Buffer((720, 1280, 3), "uint8"), Y: T.Buffer((300, 300, 3), "uint8")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    for y, x, k in T.grid(300, 300, 3):
        with T.sblock("Y"):
            v_y, v_x, v_k = T.axis.remap("SSS", [y, x, k])
            T.reads(X[v_y * 720 // 300, v_x * 1280 // 300, v_k])
            T.writes(Y[v_y, v_x, v_k])
            Y[v_y, v_x, v_k] = X[v_y * 720 // 300, v_x * 1280 // 300, v_k]
