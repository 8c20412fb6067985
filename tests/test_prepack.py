"""Weight packing at build time: a conv winner's annotated packing block is split out of the model's kernel
and evaluated once on the constant weight (leka/optimize/prepack.py); outputs still match ONNX Runtime."""
from __future__ import annotations

import numpy as np


def _conv_model(path, ci: int = 16, co: int = 32, hw: int = 13):
    """Conv 3x3 (pad 1) + bias + ReLU on a narrow NCHW map: cpu.conv_channel_pack's case."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((co, ci, 3, 3)) * 0.1).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(co).astype(np.float32), "B")
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, ci, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, co, hw, hw])], [w, b])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _winner(fused):
    """(kernel name, TVMScript) of cpu.conv_channel_pack's first candidate for the model's conv kernel."""
    from leka.optimize.extract import kernel_specs, make_task
    from leka.proposers.offline.rules import cpu_conv_channel_pack
    from tests.test_conv_rules import _context

    spec = next(s for s in kernel_specs(fused) if "conv" in s.name)
    task = make_task(spec, "host-cpu")
    irs = cpu_conv_channel_pack.apply(_context(task))  # 512-bit facts: its whole-weight copy (tests/test_conv_rules)
    assert irs, "cpu.conv_channel_pack no longer claims the conv"
    return spec.name, irs[0].to_tvmscript("host-cpu")


def test_winner_packing_is_folded_at_build_time(tmp_path):
    import onnxruntime as ort
    import tvm

    from leka.optimize.build_job import _vm_runner, compile_model, with_winners
    from leka.optimize.importer import import_model
    from leka.optimize.prepack import PACK_SUFFIX, prepack_weights, prepacked
    from leka.targets import get_target

    path = _conv_model(tmp_path / "conv.onnx")
    _loaded, fused = import_model(path)
    name, src = _winner(fused)
    assert "meta_schedule.layout_rewrite_preproc" in src  # the rule marked its whole-weight copy
    mod = prepack_weights(with_winners(fused, {name: src}))
    assert prepacked(mod) == [f"{name}:build"]
    names = [gv.name_hint for gv, _f in mod.functions_items()]
    assert not any(n.endswith(PACK_SUFFIX) for n in names)  # folded into a constant, its PrimFunc dropped
    kernel = next(f for gv, f in mod.functions_items() if gv.name_hint == f"{name}_prepacked")
    assert 'T.sblock("W_global")' not in kernel.script()  # the kernel no longer copies the weights
    assert isinstance(kernel, tvm.tirx.PrimFunc)

    x = np.random.default_rng(1).standard_normal((1, 16, 13, 13)).astype(np.float32)
    got = _vm_runner(compile_model(mod, get_target("host-cpu")))([x])[0]
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_no_annotation_is_a_no_op(tmp_path):
    from leka.optimize.importer import import_model
    from leka.optimize.prepack import prepack_weights

    _loaded, fused = import_model(_conv_model(tmp_path / "conv.onnx"))
    assert prepack_weights(fused) is fused


def _one_kernel_model(func, consts):
    """A Relax module whose main calls `func` (as kernel "k") on an input and constant weights."""
    from tvm import relax

    x_buf, out_buf = func.params[0], func.params[-1]
    bb = relax.BlockBuilder()
    kgv = bb.add_func(func.with_attr("global_symbol", "k"), "k")
    x = relax.Var("x", relax.TensorType([int(d) for d in x_buf.shape], str(x_buf.dtype)))
    with bb.function("main", [x]):
        with bb.dataflow():
            args = relax.Tuple([x] + [relax.const(c) for c in consts])
            y = bb.emit_output(relax.call_tir(kgv, args, relax.TensorType([int(d) for d in out_buf.shape],
                                                                         str(out_buf.dtype))))
        bb.emit_func_output(y)
    return bb.get()


def test_int8_dot_packing_is_folded_and_exact():
    """cpu.int8_dot's [N/16, K/4, 16, 4] weight packing, folded at build time; int8 results bit-exact."""
    import pytest
    import tvm
    from tvm import relax

    from leka.ir import CandidateIR
    from leka.optimize.build_job import with_winners
    from leka.optimize.prepack import prepack_weights, prepacked
    from leka.proposers.offline.context import RuleContext
    from leka.proposers.offline.rules import cpu_int8_dot
    from leka.targets import get_target
    from leka.tasks import get_task

    preset = get_target("host-cpu")
    if not cpu_int8_dot.has_vnni(preset.target):
        pytest.skip("this host has no AVX-512 VNNI")
    task = get_task("l1-linear-128x512x128-i8")
    irs = cpu_int8_dot.apply(RuleContext.build(task, CandidateIR.initial(task), preset, []))
    rng = np.random.default_rng(0)
    x, w, b = (rng.integers(-100, 100, a.shape).astype(a.dtype) for a in task.args[:3])
    base = _one_kernel_model(task.build(), [w, b])
    mod = prepack_weights(with_winners(base, {"k": irs[0].to_tvmscript("host-cpu")}))
    assert prepacked(mod) == ["k:build"]

    def run(m):
        vm = relax.VirtualMachine(tvm.compile(m, target=preset.tvm_target()), tvm.cpu())
        return vm["main"](tvm.runtime.tensor(x)).numpy()

    np.testing.assert_array_equal(run(mod), run(base))
