# leka: task=ex-softmax-512x384 target=opencl-pocl
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(X: T.Buffer((512, 384), "float32"), Y: T.Buffer((512, 384), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    rowmax_local = T.sblock_alloc_buffer((512,), scope="local")
    exp_local = T.sblock_alloc_buffer((512, 384), scope="local")
    rowsum_local = T.sblock_alloc_buffer((512,), scope="local")
    rowmax_rf_local = T.sblock_alloc_buffer((16, 512), scope="local")
    rowsum_rf_local = T.sblock_alloc_buffer((16, 512), scope="local")
    for i_0 in T.thread_binding(32, thread="blockIdx.x"):
        for i_1 in T.thread_binding(16, thread="threadIdx.x"):
            for ax0 in range(16):
                for ax1 in T.unroll(24):
                    with T.sblock("rowmax_rf"):
                        vk1_1 = T.axis.spatial(16, ax0)
                        v_i = T.axis.spatial(512, i_0 * 16 + i_1)
                        vk1_0 = T.axis.reduce(24, ax1)
                        T.reads(X[v_i, vk1_0 * 16 + vk1_1])
                        T.writes(rowmax_rf_local[vk1_1, v_i])
                        with T.init():
                            rowmax_rf_local[vk1_1, v_i] = T.float32(-340282346638528859811704183484516925440.0)
                        rowmax_rf_local[vk1_1, v_i] = T.max(rowmax_rf_local[vk1_1, v_i], X[v_i, vk1_0 * 16 + vk1_1])
            for ax0 in range(16):
                with T.sblock("rowmax"):
                    vk1_1 = T.axis.reduce(16, ax0)
                    v_i = T.axis.spatial(512, i_0 * 16 + i_1)
                    T.reads(rowmax_rf_local[vk1_1, v_i])
                    T.writes(rowmax_local[v_i])
                    with T.init():
                        rowmax_local[v_i] = T.float32(-340282346638528859811704183484516925440.0)
                    rowmax_local[v_i] = T.max(rowmax_local[v_i], rowmax_rf_local[vk1_1, v_i])
            for ax0_0 in range(24):
                for ax0_1 in T.vectorized(16):
                    with T.sblock("exp"):
                        v_i = T.axis.spatial(512, i_0 * 16 + i_1)
                        v_j = T.axis.spatial(384, ax0_0 * 16 + ax0_1)
                        T.reads(X[v_i, v_j], rowmax_local[v_i])
                        T.writes(exp_local[v_i, v_j])
                        exp_local[v_i, v_j] = T.exp(X[v_i, v_j] - rowmax_local[v_i])
            for ax0 in range(16):
                for ax1 in T.unroll(24):
                    with T.sblock("rowsum_rf"):
                        vk2_1 = T.axis.spatial(16, ax0)
                        v_i = T.axis.spatial(512, i_0 * 16 + i_1)
                        vk2_0 = T.axis.reduce(24, ax1)
                        T.reads(exp_local[v_i, vk2_0 * 16 + vk2_1])
                        T.writes(rowsum_rf_local[vk2_1, v_i])
                        with T.init():
                            rowsum_rf_local[vk2_1, v_i] = T.float32(0.0)
                        rowsum_rf_local[vk2_1, v_i] = rowsum_rf_local[vk2_1, v_i] + exp_local[v_i, vk2_0 * 16 + vk2_1]
            for ax0 in range(16):
                with T.sblock("rowsum"):
                    vk2_1 = T.axis.reduce(16, ax0)
                    v_i = T.axis.spatial(512, i_0 * 16 + i_1)
                    T.reads(rowsum_rf_local[vk2_1, v_i])
                    T.writes(rowsum_local[v_i])
                    with T.init():
                        rowsum_local[v_i] = T.float32(0.0)
                    rowsum_local[v_i] = rowsum_local[v_i] + rowsum_rf_local[vk2_1, v_i]
            for j_0 in range(24):
                for j_1 in T.vectorized(16):
                    with T.sblock("Y"):
                        v_i = T.axis.spatial(512, i_0 * 16 + i_1)
                        v_j = T.axis.spatial(384, j_0 * 16 + j_1)
                        T.reads(exp_local[v_i, v_j], rowsum_local[v_i])
                        T.writes(Y[v_i, v_j])
                        Y[v_i, v_j] = exp_local[v_i, v_j] / rowsum_local[v_i]
