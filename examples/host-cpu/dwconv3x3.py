# leka: task=ex-dwconv3x3-kws target=host-cpu
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(X: T.Buffer((1, 25, 5, 64), "float32"), W: T.Buffer((3, 3, 64), "float32"), Y: T.Buffer((1, 25, 5, 64), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    for n, y in T.grid(1, 25):
        for x_init in T.unroll(5):
            for ch_init in T.vectorized(64):
                with T.sblock("Y_init"):
                    v_n, v_y, v_x, v_ch = T.axis.remap("SSSS", [n, y, x_init, ch_init])
                    T.reads()
                    T.writes(Y[v_n, v_y, v_x, v_ch])
                    Y[v_n, v_y, v_x, v_ch] = T.float32(0.0)
        for ry in T.unroll(3):
            for rx in T.unroll(3):
                for x in T.unroll(5):
                    for ch in T.vectorized(64):
                        with T.sblock("Y_update"):
                            v_n, v_y, v_x, v_ch, v_ry, v_rx = T.axis.remap("SSSSRR", [n, y, x, ch, ry, rx])
                            T.reads(Y[v_n, v_y, v_x, v_ch], X[v_n, v_y + v_ry - 1, v_x + v_rx - 1, v_ch], W[v_ry, v_rx, v_ch])
                            T.writes(Y[v_n, v_y, v_x, v_ch])
                            Y[v_n, v_y, v_x, v_ch] = Y[v_n, v_y, v_x, v_ch] + T.if_then_else(1 <= v_y + v_ry and v_y + v_ry <= 25 and 1 <= v_x + v_rx and v_x + v_rx <= 5, X[v_n, v_y + v_ry - 1, v_x + v_rx - 1, v_ch], T.float32(0.0)) * W[v_ry, v_rx, v_ch]
