# leka: task=ex-dwconv3x3-kws target=opencl-pocl
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(X: T.Buffer((1, 25, 5, 64), "float32"), W: T.Buffer((3, 3, 64), "float32"), Y: T.Buffer((1, 25, 5, 64), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    for n_y_x_ch_fused_0 in T.thread_binding(125, thread="blockIdx.x"):
        for n_y_x_ch_fused_1 in T.thread_binding(64, thread="threadIdx.x"):
            for ry in T.unroll(3):
                for rx in T.unroll(3):
                    with T.sblock("Y"):
                        v_n = T.axis.spatial(1, 0)
                        v_y = T.axis.spatial(25, (n_y_x_ch_fused_0 * 64 + n_y_x_ch_fused_1) // 320)
                        v_x = T.axis.spatial(5, (n_y_x_ch_fused_0 * 64 + n_y_x_ch_fused_1) % 320 // 64)
                        v_ch = T.axis.spatial(64, (n_y_x_ch_fused_0 * 64 + n_y_x_ch_fused_1) % 64)
                        v_ry, v_rx = T.axis.remap("RR", [ry, rx])
                        T.reads(X[v_n, v_y + v_ry - 1, v_x + v_rx - 1, v_ch], W[v_ry, v_rx, v_ch])
                        T.writes(Y[v_n, v_y, v_x, v_ch])
                        with T.init():
                            Y[v_n, v_y, v_x, v_ch] = T.float32(0.0)
                        Y[v_n, v_y, v_x, v_ch] = Y[v_n, v_y, v_x, v_ch] + T.if_then_else(1 <= v_y + v_ry and v_y + v_ry <= 25 and 1 <= v_x + v_rx and v_x + v_rx <= 5, X[v_n, v_y + v_ry - 1, v_x + v_rx - 1, v_ch], T.float32(0.0)) * W[v_ry, v_rx, v_ch]
