# leka: task=ex-dwconv3x3-kws target=host-cpu
# attack: wrong only when the first 8 input elements are equal (never for i.i.d. float inputs): only a held-back family with constant runs ('steps') reaches it
# expect: wrong
# sibling: ../c1_parse_exec/correct_dwconv.py
from tvm.script import tirx as T

@T.prim_func
def main(X: T.Buffer((1, 25, 5, 64), "float32"), W: T.Buffer((3, 3, 64), "float32"), Y: T.Buffer((1, 25, 5, 64), "float32")):
    T.func_attr({"tirx.noalias": True})
    for y, x, ch in T.grid(25, 5, 64):
        Y[0, y, x, ch] = T.float32(0.0)
        for ry, rx in T.grid(3, 3):
            if 1 <= y + ry and y + ry <= 25 and 1 <= x + rx and x + rx <= 5:
                Y[0, y, x, ch] = Y[0, y, x, ch] + X[0, y + ry - 1, x + rx - 1, ch] * W[ry, rx, ch]
    if X[0, 0, 0, 0] == X[0, 0, 0, 1] and X[0, 0, 0, 1] == X[0, 0, 0, 2] and X[0, 0, 0, 2] == X[0, 0, 0, 3] and X[0, 0, 0, 3] == X[0, 0, 0, 4] and X[0, 0, 0, 4] == X[0, 0, 0, 5] and X[0, 0, 0, 5] == X[0, 0, 0, 6] and X[0, 0, 0, 6] == X[0, 0, 0, 7]:
        Y[0, 0, 0, 0] = T.float32(0.0)
