# leka: task=ex-dwconv3x3-kws target=host-cpu
# attack: wrong only when the first 8 input elements alternate in sign, starting positive (1 in 256 for i.i.d. inputs, so a trial set of 8 misses it ~97 % of the time): only a held-back family alternating about the median ('alternating') reaches it every time
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
    if X[0, 0, 0, 0] > T.float32(0.0) and X[0, 0, 0, 1] < T.float32(0.0) and X[0, 0, 0, 2] > T.float32(0.0) and X[0, 0, 0, 3] < T.float32(0.0) and X[0, 0, 0, 4] > T.float32(0.0) and X[0, 0, 0, 5] < T.float32(0.0) and X[0, 0, 0, 6] > T.float32(0.0) and X[0, 0, 0, 7] < T.float32(0.0):
        Y[0, 0, 0, 0] = T.float32(0.0)
