# leka: task=ex-dwconv3x3-kws target=host-cpu
# attack: a 'fast path' that skips every input element with |x| > 16: exact on normal/uniform inputs, wrong on heavy-tailed ones
# expect: wrong
# sibling: ../c1_parse_exec/correct_dwconv.py
from tvm.script import tirx as T

@T.prim_func
def main(X: T.Buffer((1, 25, 5, 64), "float32"), W: T.Buffer((3, 3, 64), "float32"), Y: T.Buffer((1, 25, 5, 64), "float32")):
    T.func_attr({"tirx.noalias": True})
    for y, x, ch in T.grid(25, 5, 64):
        Y[0, y, x, ch] = T.float32(0.0)
        for ry, rx in T.grid(3, 3):
            if T.abs(X[0, y, x, ch]) <= T.float32(16.0) and 1 <= y + ry and y + ry <= 25 and 1 <= x + rx and x + rx <= 5:
                Y[0, y, x, ch] = Y[0, y, x, ch] + X[0, y + ry - 1, x + rx - 1, ch] * W[ry, rx, ch]
