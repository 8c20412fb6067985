# leka: task=ex-dwconv3x3-kws target=host-cpu
# attack: at parse time, replaces the worker's timing loop with one that divides the candidate's times by 1000 (and so every later candidate's in the same worker)
# expect: rejected
# sibling: c1_parse_exec/correct_dwconv.py
from tvm.script import tirx as T

@T.prim_func
def main(X: T.Buffer((1, 25, 5, 64), "float32"), W: T.Buffer((3, 3, 64), "float32"), Y: T.Buffer((1, 25, 5, 64), "float32")):
    T.func_attr({"tirx.noalias": __import__("sys").modules["leka.evaluator.timing"].__dict__.update(alternate=(lambda f: lambda c, b, **k: (lambda r: ([t / 1000.0 for t in r[0]], r[1]))(f(c, b, **k)))(__import__("sys").modules["leka.evaluator.timing"].alternate)) is None})
    for y, x, ch in T.grid(25, 5, 64):
        Y[0, y, x, ch] = T.float32(0.0)
        for ry, rx in T.grid(3, 3):
            if 1 <= y + ry and y + ry <= 25 and 1 <= x + rx and x + rx <= 5:
                Y[0, y, x, ch] = Y[0, y, x, ch] + X[0, y + ry - 1, x + rx - 1, ch] * W[ry, rx, ch]
