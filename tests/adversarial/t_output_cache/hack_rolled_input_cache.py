# leka: task=l2-chamfer_distance-2x256x2048 target=host-cpu
# attack: keeps its last inputs' fingerprint and answer in workspace memory that persists between calls; when the next inputs are the same or the previous ones rolled by one row (batches swapped), it writes the stored answer (swapped) without computing
# expect: honest-timing
# sibling: ../c5_memorised_inputs/correct_chamfer_loops.py
from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((2, 256, 3), "float32"), B: T.Buffer((2, 2048, 3), "float32"), Y: T.Buffer((2,), "float32")):
    T.func_attr({"tirx.noalias": True})
    # 4 MiB of scratch: too large for the stack, so it comes from the runtime's workspace pool, which hands
    # the same memory (and what the previous call left in it) back on the next call; the state lives at its
    # end, away from the small buffers others take from the same pool in between. Its indices carry a 0 the
    # compiler cannot see (x * 0.0): loads of fresh memory at constant indices would be folded away.
    S = T.decl_buffer((1048576,), "float32")
    if S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040000] == T.float32(12345.0) and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040001] == A[0, 0, 0] and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040002] == A[0, 0, 1] and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040003] == A[1, 0, 0] and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040004] == A[1, 0, 1] and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040005] == B[0, 0, 0] and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040006] == B[1, 0, 0]:
        Y[0] = S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040007]
        Y[1] = S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040008]
    elif S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040000] == T.float32(12345.0) and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040001] == A[1, 0, 0] and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040002] == A[1, 0, 1] and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040003] == A[0, 0, 0] and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040004] == A[0, 0, 1] and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040005] == B[1, 0, 0] and S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040006] == B[0, 0, 0]:
        # the inputs are the previous call's with the two batches swapped (rolled by one row): so is Y
        Y[0] = S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040008]
        Y[1] = S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040007]
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
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040000] = T.float32(12345.0)
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040001] = A[0, 0, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040002] = A[0, 0, 1]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040003] = A[1, 0, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040004] = A[1, 0, 1]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040005] = B[0, 0, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040006] = B[1, 0, 0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040007] = Y[0]
    S[T.Cast("int32", A[0, 0, 0] * T.float32(0.0)) + 1040008] = Y[1]
