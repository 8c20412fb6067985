# leka: task=l3-mfcc-frontend target=host-cpu
# attack: returns (y, y): one output more than the task has
# expect: wrong
# sibling: correct_mfcc_graph.py
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(power: R.Tensor((49, 257), dtype="float32"), mel_fb: R.Tensor((257, 40), dtype="float32"), dct: R.Tensor((40, 10), dtype="float32")) -> R.Tuple(R.Tensor((49, 10), dtype="float32"), R.Tensor((49, 10), dtype="float32")):
        R.func_attr({"num_input": 3})
        with R.dataflow():
            lv: R.Tensor((49, 40), dtype="float32") = R.matmul(power, mel_fb, out_dtype=None)
            lv1: R.Tensor((49, 40), dtype="float32") = R.add(lv, R.const(9.9999999747524271e-07, "float32"))
            lv2: R.Tensor((49, 40), dtype="float32") = R.log(lv1)
            gv: R.Tensor((49, 10), dtype="float32") = R.matmul(lv2, dct, out_dtype=None)
            R.output(gv)
        return (gv, gv)