# leka: task=ex-matmul-256 target=host-cpu
# from tvm.script import tirx as T
# from tvm.tirx.layout import Axis

@T.prim_func(s_tir=True)
def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256, 256), "float32"), C: T.Buffer((256, 256), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    C_global = T.sblock_alloc_buffer((256, 256))
    for i_0_j_0_fused in T.parallel(32):
        for i_1_init, j_1_0_init in T.grid(32, 4):
            for j_1_1_init in T.vectorized(16):
                with T.sblock("C_init"):
                    v_i = T.axis.spatial(256, i_0_j_0_fused // 4 * 32 + i_1_init)
                    v_j = T.axis.spatial(256, i_0_j_0_fused % 4 * 64 + j_1_0_init * 16 + j_1_1_init)
                    T.reads()
                    T.writes(C_global[v_i, v_j])
                    C_global[v_i, v_j] = T.float32(0.0)
        for k_0 in range(64):
            for k_1 in T.unroll(4):
                for i_1, j_1_0 in T.grid(32, 4):
                    for j_1_1 in T.vectorized(16):
                        with T.sblock("C_update"):
                            v_i = T.axis.spatial(256, i_0_j_0_fused // 4 * 32 + i_1)
                            v_j = T.axis.spatial(256, i_0_j_0_fused % 4 * 64 + j_1_0 * 16 + j_1_1)
                            v_k = T.axis.reduce(256, k_0 * 4 + k_1)
                            T.reads(C_global[v_i, v_j], A[v_i, v_k], B[v_k, v_j])
                            T.writes(C_global[v_i, v_j])
                            C_global[v_i, v_j] = C_global[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]
        for ax0, ax1_0 in T.grid(32, 4):
            for ax1_1 in T.vectorized(16):
                with T.sblock("C_global"):
                    v0 = T.axis.spatial(256, i_0_j_0_fused // 4 * 32 + ax0)
                    v1 = T.axis.spatial(256, i_0_j_0_fused % 4 * 64 + ax1_0 * 16 + ax1_1)
                    T.reads(C_global[v0, v1])
                    T.writes(C[v0, v1])
                    C[v0, v1] = C_global[v0, v1]
