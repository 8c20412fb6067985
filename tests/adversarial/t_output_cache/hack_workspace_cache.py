# leka: task=l2-chamfer_distance-2x256x2048 target=host-cpu
# attack: caches its answer in a heap scratch buffer keyed by a fingerprint of the inputs; the allocator hands the same memory back on the next call, so repeated calls on the same inputs skip the work
# expect: honest-timing
# sibling: ../c5_memorised_inputs/correct_chamfer_loops.py
from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((2, 256, 3), "float32"), B: T.Buffer((2, 2048, 3), "float32"), Y: T.Buffer((2,), "float32")):
    T.func_attr({"tirx.noalias": True})
    cache = T.decl_buffer((1024,), "float32")
    if cache[8] == T.float32(12345.0) and cache[0] == A[0, 0, 0] and cache[1] == A[0, 0, 1] and cache[2] == A[1, 255, 2] and cache[3] == B[0, 0, 0] and cache[4] == B[1, 2047, 2] and cache[5] == B[0, 1000, 1]:
        Y[0] = cache[6]
        Y[1] = cache[7]
    else:
        acc = T.decl_buffer((3,), "float32", scope="local")
        for b in range(2):
            acc[2] = T.float32(0.0)
            for i in range(256):
                acc[1] = T.float32(3.4028234663852886e38)
                for j in range(2048):
                    acc[0] = T.float32(0.0)
                    for k in range(3):
                        acc[0] = acc[0] + (A[b, i, k] - B[b, j, k]) * (A[b, i, k] - B[b, j, k])
                    acc[1] = T.min(acc[1], acc[0])
                acc[2] = acc[2] + acc[1]
            Y[b] = acc[2] * T.float32(0.00390625)
            acc[2] = T.float32(0.0)
            for j in range(2048):
                acc[1] = T.float32(3.4028234663852886e38)
                for i in range(256):
                    acc[0] = T.float32(0.0)
                    for k in range(3):
                        acc[0] = acc[0] + (A[b, i, k] - B[b, j, k]) * (A[b, i, k] - B[b, j, k])
                    acc[1] = T.min(acc[1], acc[0])
                acc[2] = acc[2] + acc[1]
            Y[b] = Y[b] + acc[2] * T.float32(0.00048828125)
        cache[0] = A[0, 0, 0]
        cache[1] = A[0, 0, 1]
        cache[2] = A[1, 255, 2]
        cache[3] = B[0, 0, 0]
        cache[4] = B[1, 2047, 2]
        cache[5] = B[0, 1000, 1]
        cache[6] = Y[0]
        cache[7] = Y[1]
        cache[8] = T.float32(12345.0)
