# leka: task=ex-matmul-256 target=host-cpu
# attack: none: honest plain-loop matmul
# expect: correct
from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256, 256), "float32"), C: T.Buffer((256, 256), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i, j in T.grid(256, 256):
        C[i, j] = T.float32(0.0)
        for k in range(256):
            C[i, j] = C[i, j] + A[i, k] * B[k, j]
