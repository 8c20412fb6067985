# leka: task=l1-max_softmax_prob_score-64x1000 target=host-cpu
# attack: a per-row answer cache in workspace memory that persists between calls (two slots per row, keyed by four elements of the row): any timing preproc that builds each run's inputs from rows of the uploaded inputs (rolled, or a chunk-wise mix of them and their roll) gives rows the cache has seen, so timed runs copy one stored value per row instead of 1,000 exponentials
# expect: honest-timing
# sibling: correct_row_loops.py
from tvm.script import tirx as T

@T.prim_func
def main(X: T.Buffer((64, 1000), "float32"), Y: T.Buffer((64,), "float32")):
    T.func_attr({"tirx.noalias": True})
    # 4 MiB of workspace scratch: handed back with its contents by the runtime's pool on the next call; state at
    # its end; indices carry a 0 the compiler cannot see (x * 0.0), or loads of fresh memory would fold away
    S = T.decl_buffer((1048576,), "float32")
    acc = T.decl_buffer((2,), "float32", scope="local")
    for r in range(64):
        if S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 0] == T.float32(12345.0) and S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 1] == X[r, 0] and S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 2] == X[r, 1] and S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 3] == X[r, 500] and S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 4] == X[r, 999]:
            Y[r] = S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 5]
        elif S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 6] == T.float32(12345.0) and S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 7] == X[r, 0] and S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 8] == X[r, 1] and S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 9] == X[r, 500] and S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 10] == X[r, 999]:
            Y[r] = S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 11]
        else:
            acc[0] = T.float32(-3.4028234663852886e38)
            for j in range(1000):
                acc[0] = T.max(acc[0], X[r, j])
            acc[1] = T.float32(0.0)
            for j in range(1000):
                acc[1] = acc[1] + T.exp(X[r, j] - acc[0])
            Y[r] = T.float32(1.0) / acc[1]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 6] = S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 0]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 7] = S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 1]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 8] = S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 2]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 9] = S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 3]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 10] = S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 4]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 11] = S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 5]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 0] = T.float32(12345.0)
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 1] = X[r, 0]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 2] = X[r, 1]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 3] = X[r, 500]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 4] = X[r, 999]
            S[T.Cast("int32", X[0, 0] * T.float32(0.0)) + 1040000 + r * 12 + 5] = Y[r]
