# leka: task=ex-dwconv3x3-kws target=host-cpu
# attack: computes Y[0, 0, 0, 0] alone; when the output buffer already holds it (the previous run's answer), skips the rest: a ~10 us kernel, so a round repeats it many times
# expect: honest-timing
# sibling: ../c1_parse_exec/correct_dwconv.py
from tvm.script import tirx as T

@T.prim_func
def main(X: T.Buffer((1, 25, 5, 64), "float32"), W: T.Buffer((3, 3, 64), "float32"), Y: T.Buffer((1, 25, 5, 64), "float32")):
    T.func_attr({"tirx.noalias": True})
    s = T.decl_buffer((1,), "float32", scope="local")
    s[0] = T.float32(0.0)
    for ry, rx in T.grid(3, 3):
        if 1 <= ry and 1 <= rx:
            s[0] = s[0] + X[0, ry - 1, rx - 1, 0] * W[ry, rx, 0]
    # bit-for-bit compare: with fast-math a float comparison against a NaN-poisoned output folds away
    if T.reinterpret("int32", Y[0, 0, 0, 0]) == T.reinterpret("int32", s[0]):
        T.evaluate(0)
    else:
        for y, x, ch in T.grid(25, 5, 64):
            Y[0, y, x, ch] = T.float32(0.0)
            for ry, rx in T.grid(3, 3):
                if 1 <= y + ry and y + ry <= 25 and 1 <= x + rx and x + rx <= 5:
                    Y[0, y, x, ch] = Y[0, y, x, ch] + X[0, y + ry - 1, x + rx - 1, ch] * W[ry, rx, ch]
