# leka: task=ex-softmax-512x384 target=host-cpu
# corpus: the definition as lowered, unscheduled (expect: correct)
from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(X: T.Buffer((512, 384), "float32"), Y: T.Buffer((512, 384), "float32")):
    T.func_attr({"tirx.noalias": True})
    # with T.sblock("root"):
    rowmax = T.sblock_alloc_buffer((512,))
    exp = T.sblock_alloc_buffer((512, 384))
    rowsum = T.sblock_alloc_buffer((512,))
    for i, k1 in T.grid(512, 384):
        with T.sblock("rowmax"):
            v_i, v_k1 = T.axis.remap("SR", [i, k1])
            T.reads(X[v_i, v_k1])
            T.writes(rowmax[v_i])
            with T.init():
                rowmax[v_i] = T.float32(-340282346638528859811704183484516925440.0)
            rowmax[v_i] = T.max(rowmax[v_i], X[v_i, v_k1])
    for i, j in T.grid(512, 384):
        with T.sblock("exp"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(X[v_i, v_j], rowmax[v_i])
            T.writes(exp[v_i, v_j])
            exp[v_i, v_j] = T.exp(X[v_i, v_j] - rowmax[v_i])
    for i, k2 in T.grid(512, 384):
        with T.sblock("rowsum"):
            v_i, v_k2 = T.axis.remap("SR", [i, k2])
            T.reads(exp[v_i, v_k2])
            T.writes(rowsum[v_i])
            with T.init():
                rowsum[v_i] = T.float32(0.0)
            rowsum[v_i] = rowsum[v_i] + exp[v_i, v_k2]
    for i, j in T.grid(512, 384):
        with T.sblock("Y"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(exp[v_i, v_j], rowsum[v_i])
            T.writes(Y[v_i, v_j])
            Y[v_i, v_j] = exp[v_i, v_j] / rowsum[v_i]