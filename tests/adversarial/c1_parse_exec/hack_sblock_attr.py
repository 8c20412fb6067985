# leka: task=ex-dwconv3x3-kws target=host-cpu
# attack: a T.sblock_attr value (inside a block) runs os.system
# expect: rejected
# sibling: correct_dwconv.py
from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(X: T.Buffer((1, 25, 5, 64), "float32"), W: T.Buffer((3, 3, 64), "float32"), Y: T.Buffer((1, 25, 5, 64), "float32")):
    T.func_attr({"tirx.noalias": True})
    for y, x, ch in T.grid(25, 5, 64):
        with T.sblock("Y"):
            v_y, v_x, v_ch = T.axis.remap("SSS", [y, x, ch])
            T.sblock_attr({"x": __import__("os").system("touch @@DIR@@/ran; setsid bash -c 'exec -a @@TAG@@ sleep 1000' </dev/null >/dev/null 2>&1 & bash -c 'echo x >/dev/tcp/127.0.0.1/@@PORT@@' 2>/dev/null; true")})
            Y[0, v_y, v_x, v_ch] = T.float32(0.0)
            for ry, rx in T.grid(3, 3):
                if 1 <= v_y + ry and v_y + ry <= 25 and 1 <= v_x + rx and v_x + rx <= 5:
                    Y[0, v_y, v_x, v_ch] = Y[0, v_y, v_x, v_ch] + X[0, v_y + ry - 1, v_x + rx - 1, v_ch] * W[ry, rx, v_ch]
