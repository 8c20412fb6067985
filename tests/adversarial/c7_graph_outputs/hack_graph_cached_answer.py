# leka: task=l3-mfcc-frontend target=host-cpu
# attack: a graph whose one kernel keeps its inputs' fingerprint and answer in workspace memory that persists between calls; graphs are timed on the same inputs call after call, so every timed call copies the stored answer
# expect: honest-timing
# sibling: correct_mfcc_graph.py
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def mfcc(power: T.Buffer((49, 257), "float32"), mel_fb: T.Buffer((257, 40), "float32"), dct: T.Buffer((40, 10), "float32"), y: T.Buffer((49, 10), "float32")):
        T.func_attr({"tirx.noalias": True})
        # 4 MiB of workspace scratch that the runtime's pool hands back on the next call, state at its end, indices
        # with a 0 the compiler cannot see (see t_output_cache/hack_rolled_input_cache.py)
        S = T.decl_buffer((1048576,), "float32")
        if S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040000] == T.float32(12345.0) and S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040001] == power[0, 0] and S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040002] == power[0, 1] and S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040003] == power[48, 256] and S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040004] == mel_fb[0, 0] and S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040005] == mel_fb[256, 39] and S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040006] == dct[0, 0] and S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040007] == dct[39, 9]:
            for i, j in T.grid(49, 10):
                y[i, j] = S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040016 + i * 10 + j]
        else:
            logmel = T.decl_buffer((49, 40), "float32")
            for i, m in T.grid(49, 40):
                logmel[i, m] = T.float32(0.0)
                for f in range(257):
                    logmel[i, m] = logmel[i, m] + power[i, f] * mel_fb[f, m]
                logmel[i, m] = T.log(logmel[i, m] + T.float32(9.9999999747524271e-07))
            for i, j in T.grid(49, 10):
                y[i, j] = T.float32(0.0)
                for m in range(40):
                    y[i, j] = y[i, j] + logmel[i, m] * dct[m, j]
                S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040016 + i * 10 + j] = y[i, j]
            S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040001] = power[0, 0]
            S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040002] = power[0, 1]
            S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040003] = power[48, 256]
            S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040004] = mel_fb[0, 0]
            S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040005] = mel_fb[256, 39]
            S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040006] = dct[0, 0]
            S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040007] = dct[39, 9]
            S[T.Cast("int32", power[0, 0] * T.float32(0.0)) + 1040000] = T.float32(12345.0)

    @R.function
    def main(power: R.Tensor((49, 257), dtype="float32"), mel_fb: R.Tensor((257, 40), dtype="float32"), dct: R.Tensor((40, 10), dtype="float32")) -> R.Tensor((49, 10), dtype="float32"):
        R.func_attr({"num_input": 3})
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.mfcc, (power, mel_fb, dct), out_ty=R.Tensor((49, 10), dtype="float32"))
            R.output(gv)
        return gv
