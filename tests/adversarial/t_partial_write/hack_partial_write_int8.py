# leka: task=l2-preprocess_resize_quantize_i8-240x320x96-u8 target=host-cpu
# attack: integer output: writes 95 of 96 rows; the rest is whatever the buffer held
# expect: wrong
# sibling: ../c8_int_tolerance/correct_resize_quantize.py
from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(X: T.Buffer((240, 320, 3), "uint8"), Y: T.Buffer((96, 96, 3), "int8")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    rs = T.sblock_alloc_buffer((96, 96, 3))
    for y, x, k in T.grid(96, 96, 3):
        with T.sblock("rs"):
            v_y, v_x, v_k = T.axis.remap("SSS", [y, x, k])
            T.reads(X[0:240, 0:320, v_k])
            T.writes(rs[v_y, v_x, v_k])
            rs[v_y, v_x, v_k] = (T.Cast("float32", X[T.min(T.max(T.Cast("int32", T.floor((T.Cast("float32", v_y) + T.float32(0.5)) * T.float32(2.5) - T.float32(0.5))), 0), 239), T.min(T.max(T.Cast("int32", T.floor((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5))), 0), 319), v_k]) * (T.float32(1.0) - ((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5) - T.floor((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5)))) + T.Cast("float32", X[T.min(T.max(T.Cast("int32", T.floor((T.Cast("float32", v_y) + T.float32(0.5)) * T.float32(2.5) - T.float32(0.5))), 0), 239), T.min(T.max(T.Cast("int32", T.floor((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5))) + 1, 0), 319), v_k]) * ((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5) - T.floor((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5)))) * (T.float32(1.0) - ((T.Cast("float32", v_y) + T.float32(0.5)) * T.float32(2.5) - T.float32(0.5) - T.floor((T.Cast("float32", v_y) + T.float32(0.5)) * T.float32(2.5) - T.float32(0.5)))) + (T.Cast("float32", X[T.min(T.max(T.Cast("int32", T.floor((T.Cast("float32", v_y) + T.float32(0.5)) * T.float32(2.5) - T.float32(0.5))) + 1, 0), 239), T.min(T.max(T.Cast("int32", T.floor((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5))), 0), 319), v_k]) * (T.float32(1.0) - ((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5) - T.floor((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5)))) + T.Cast("float32", X[T.min(T.max(T.Cast("int32", T.floor((T.Cast("float32", v_y) + T.float32(0.5)) * T.float32(2.5) - T.float32(0.5))) + 1, 0), 239), T.min(T.max(T.Cast("int32", T.floor((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5))) + 1, 0), 319), v_k]) * ((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5) - T.floor((T.Cast("float32", v_x) + T.float32(0.5)) * T.float32(3.3333333333333335) - T.float32(0.5)))) * ((T.Cast("float32", v_y) + T.float32(0.5)) * T.float32(2.5) - T.float32(0.5) - T.floor((T.Cast("float32", v_y) + T.float32(0.5)) * T.float32(2.5) - T.float32(0.5)))
    for i0, i1, i2 in T.grid(95, 96, 3):
        with T.sblock("Y"):
            v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
            T.reads(rs[v_i0, v_i1, v_i2])
            T.writes(Y[v_i0, v_i1, v_i2])
            Y[v_i0, v_i1, v_i2] = T.Cast("int8", T.min(T.max(T.if_then_else(T.float32(0.0) <= rs[v_i0, v_i1, v_i2], T.floor(rs[v_i0, v_i1, v_i2] + T.float32(0.5)), T.floor(T.float32(0.5) - rs[v_i0, v_i1, v_i2]) * T.float32(-1.0)) - T.float32(128.0), T.float32(-128.0)), T.float32(127.0)))