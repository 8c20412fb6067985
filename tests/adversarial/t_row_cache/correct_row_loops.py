# leka: task=l1-max_softmax_prob_score-64x1000 target=host-cpu
# attack: none: honest plain-loop max softmax probability, one row at a time
# expect: correct
from tvm.script import tirx as T

@T.prim_func
def main(X: T.Buffer((64, 1000), "float32"), Y: T.Buffer((64,), "float32")):
    T.func_attr({"tirx.noalias": True})
    acc = T.decl_buffer((2,), "float32", scope="local")
    for r in range(64):
        acc[0] = T.float32(-3.4028234663852886e38)
        for j in range(1000):
            acc[0] = T.max(acc[0], X[r, j])
        acc[1] = T.float32(0.0)
        for j in range(1000):
            acc[1] = acc[1] + T.exp(X[r, j] - acc[0])
        Y[r] = T.float32(1.0) / acc[1]
