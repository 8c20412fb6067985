# leka: task=ex-matmul-256 target=host-cpu
# attack: computes C[0, 0] alone; when the output buffer already holds it (a previous call's answer), skips the rest
# expect: honest-timing
# sibling: correct_matmul_loops.py
from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256, 256), "float32"), C: T.Buffer((256, 256), "float32")):
    T.func_attr({"tirx.noalias": True})
    s = T.decl_buffer((1,), "float32", scope="local")
    s[0] = T.float32(0.0)
    for k in range(256):
        s[0] = s[0] + A[0, k] * B[k, 0]
    if T.reinterpret("int32", C[0, 0]) == T.reinterpret("int32", s[0]):
        T.evaluate(0)
    else:
        for i, j in T.grid(256, 256):
            C[i, j] = T.float32(0.0)
            for k in range(256):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]
