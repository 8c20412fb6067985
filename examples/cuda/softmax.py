# leka: task=ex-softmax-512x384 target=cuda
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(X: T.Buffer((512, 384), "float32"), Y: T.Buffer((512, 384), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    rowmax_shared = T.sblock_alloc_buffer((512,), scope="shared")
    rowsum_shared = T.sblock_alloc_buffer((512,), scope="shared")
    for i in T.thread_binding(512, thread="blockIdx.x"):
        for ax0_0 in range(3):
            for ax0_1 in T.thread_binding(128, thread="threadIdx.x"):
                with T.sblock("rowmax"):
                    v_i = T.axis.spatial(512, i)
                    v_k1 = T.axis.reduce(384, ax0_0 * 128 + ax0_1)
                    T.reads(X[v_i, v_k1])
                    T.writes(rowmax_shared[v_i])
                    with T.init():
                        rowmax_shared[v_i] = T.float32(-340282346638528859811704183484516925440.0)
                    rowmax_shared[v_i] = T.max(rowmax_shared[v_i], X[v_i, v_k1])
        for ax0_0 in range(3):
            for ax0_1 in T.thread_binding(128, thread="threadIdx.x"):
                with T.sblock("rowsum"):
                    v_i = T.axis.spatial(512, i)
                    v_k2 = T.axis.reduce(384, ax0_0 * 128 + ax0_1)
                    T.reads(X[v_i, v_k2], rowmax_shared[v_i])
                    T.writes(rowsum_shared[v_i])
                    with T.init():
                        rowsum_shared[v_i] = T.float32(0.0)
                    rowsum_shared[v_i] = rowsum_shared[v_i] + T.exp(X[v_i, v_k2] - rowmax_shared[v_i])
        for j_0 in range(3):
            for j_1 in T.thread_binding(128, thread="threadIdx.x"):
                with T.sblock("Y"):
                    v_i = T.axis.spatial(512, i)
                    v_j = T.axis.spatial(384, j_0 * 128 + j_1)
                    T.reads(X[v_i, v_j], rowmax_shared[v_i], rowsum_shared[v_i])
                    T.writes(Y[v_i, v_j])
                    Y[v_i, v_j] = T.exp(X[v_i, v_j] - rowmax_shared[v_i]) / rowsum_shared[v_i]
