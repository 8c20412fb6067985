# leka: task=ex-dwconv3x3-kws target=host-cpu
# attack: drops the padding test and reads X out of bounds at the borders (neighbouring memory)
# expect: not-correct
# sibling: ../c1_parse_exec/correct_dwconv.py
from tvm.script import tirx as T

@T.prim_func
def main(X: T.Buffer((1, 25, 5, 64), "float32"), W: T.Buffer((3, 3, 64), "float32"), Y: T.Buffer((1, 25, 5, 64), "float32")):
    T.func_attr({"tirx.noalias": True})
    for y, x, ch in T.grid(25, 5, 64):
        Y[0, y, x, ch] = T.float32(0.0)
        for ry, rx in T.grid(3, 3):
            Y[0, y, x, ch] = Y[0, y, x, ch] + X[0, y + ry - 1, x + rx - 1, ch] * W[ry, rx, ch]
