# leka: task=ex-softmax-512x384 target=host-cpu
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(X: T.Buffer((512, 384), "float32"), Y: T.Buffer((512, 384), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    rowmax = T.sblock_alloc_buffer((512,))
    exp = T.sblock_alloc_buffer((512, 384))
    rowsum = T.sblock_alloc_buffer((512,))
    rowmax_rf = T.sblock_alloc_buffer((16, 512))
    rowsum_rf = T.sblock_alloc_buffer((16, 512))
    for i in range(512):
        for ax0 in range(16):
            for ax1 in T.unroll(24):
                with T.sblock("rowmax_rf"):
                    vk1_1, v_i, vk1_0 = T.axis.remap("SSR", [ax0, i, ax1])
                    T.reads(X[v_i, vk1_0 * 16 + vk1_1])
                    T.writes(rowmax_rf[vk1_1, v_i])
                    with T.init():
                        rowmax_rf[vk1_1, v_i] = T.float32(-340282346638528859811704183484516925440.0)
                    rowmax_rf[vk1_1, v_i] = T.max(rowmax_rf[vk1_1, v_i], X[v_i, vk1_0 * 16 + vk1_1])
        for ax0 in range(16):
            with T.sblock("rowmax"):
                vk1_1, v_i = T.axis.remap("RS", [ax0, i])
                T.reads(rowmax_rf[vk1_1, v_i])
                T.writes(rowmax[v_i])
                with T.init():
                    rowmax[v_i] = T.float32(-340282346638528859811704183484516925440.0)
                rowmax[v_i] = T.max(rowmax[v_i], rowmax_rf[vk1_1, v_i])
        for ax0 in range(384):
            with T.sblock("exp"):
                v_i, v_j = T.axis.remap("SS", [i, ax0])
                T.reads(X[v_i, v_j], rowmax[v_i])
                T.writes(exp[v_i, v_j])
                exp[v_i, v_j] = T.exp(X[v_i, v_j] - rowmax[v_i])
        for ax0 in range(16):
            for ax1 in T.unroll(24):
                with T.sblock("rowsum_rf"):
                    vk2_1, v_i, vk2_0 = T.axis.remap("SSR", [ax0, i, ax1])
                    T.reads(exp[v_i, vk2_0 * 16 + vk2_1])
                    T.writes(rowsum_rf[vk2_1, v_i])
                    with T.init():
                        rowsum_rf[vk2_1, v_i] = T.float32(0.0)
                    rowsum_rf[vk2_1, v_i] = rowsum_rf[vk2_1, v_i] + exp[v_i, vk2_0 * 16 + vk2_1]
        for ax0 in range(16):
            with T.sblock("rowsum"):
                vk2_1, v_i = T.axis.remap("RS", [ax0, i])
                T.reads(rowsum_rf[vk2_1, v_i])
                T.writes(rowsum[v_i])
                with T.init():
                    rowsum[v_i] = T.float32(0.0)
                rowsum[v_i] = rowsum[v_i] + rowsum_rf[vk2_1, v_i]
        for j in range(384):
            with T.sblock("Y"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads(exp[v_i, v_j], rowsum[v_i])
                T.writes(Y[v_i, v_j])
                Y[v_i, v_j] = exp[v_i, v_j] / rowsum[v_i]
