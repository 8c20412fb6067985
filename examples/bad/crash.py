# leka: task=ex-matmul-256 target=host-cpu
# Expected verdict: crash. Writes 64 GiB past the end of C (unmapped memory): the worker dies with SIGSEGV.
from tvm.script import tirx as T


@T.prim_func
def main(A: T.Buffer((256, 256), "float32"), B: T.Buffer((256, 256), "float32"), C: T.Buffer((256, 256), "float32")):
    T.func_attr({"tirx.noalias": True})
    C_flat = T.decl_buffer((T.int64(1) << T.int64(40),), "float32", data=C.data)
    for i in range(16):
        C_flat[(T.int64(i) + T.int64(1)) << T.int64(34)] = A[0, i]
