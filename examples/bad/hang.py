# leka: task=ex-matmul-256 target=host-cpu
# Expected verdict: timeout. A loop of 2^50 iterations (days of work) that the compiler cannot remove.
from tvm.script import tirx as T


@T.prim_func
def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256, 256), "float32"), C: T.Buffer((256, 256), "float32")):
    T.func_attr({"tirx.noalias": True})
    for k in T.serial(T.int64(1) << T.int64(50)):
        C[0, 0] = C[0, 0] * A[0, 1] + B[T.Cast("int32", k % T.int64(256)), 0]
