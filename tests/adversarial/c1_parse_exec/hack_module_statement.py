# leka: task=ex-dwconv3x3-kws target=host-cpu
# attack: a module-level assignment runs os.system before the function is parsed
# expect: rejected
# sibling: correct_dwconv.py
from tvm.script import tirx as T

_ = __import__("os").system("touch @@DIR@@/ran; setsid bash -c 'exec -a @@TAG@@ sleep 1000' </dev/null >/dev/null 2>&1 & bash -c 'echo x >/dev/tcp/127.0.0.1/@@PORT@@' 2>/dev/null; true")

@T.prim_func
def main(X: T.Buffer((1, 25, 5, 64), "float32"), W: T.Buffer((3, 3, 64), "float32"), Y: T.Buffer((1, 25, 5, 64), "float32")):
    T.func_attr({"tirx.noalias": True})
    for y, x, ch in T.grid(25, 5, 64):
        Y[0, y, x, ch] = T.float32(0.0)
        for ry, rx in T.grid(3, 3):
            if 1 <= y + ry and y + ry <= 25 and 1 <= x + rx and x + rx <= 5:
                Y[0, y, x, ch] = Y[0, y, x, ch] + X[0, y + ry - 1, x + rx - 1, ch] * W[ry, rx, ch]
