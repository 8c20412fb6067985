"""The IR call policy (leka.evaluator.ir_policy): extern/packed calls out of a kernel are rejected naming
the call, the math functions and intrinsics correct candidates use are accepted, and the evaluation
worker applies it before building (the hostile call never runs)."""
from __future__ import annotations

from pathlib import Path

import pytest

from leka.evaluator.ir_policy import IRPolicyViolation, check_ir

ROOT = Path(__file__).resolve().parents[1]
PRIM = '''
@T.prim_func
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        {body}
'''
GRAPH = '''
@I.ir_module
class Module:
    @R.function{deco}
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        {body}
        return y
'''


def _prim(body: str):
    import tvm

    return tvm.script.from_source(PRIM.format(body=body))


def _graph(body: str, deco: str = ""):
    import tvm

    return tvm.script.from_source(GRAPH.format(body=body, deco=deco))


PRIM_ATTACKS = [
    ('T.evaluate(T.call_extern("int32", "system", "touch /tmp/x"))', "extern call 'system'"),
    ('T.evaluate(T.call_extern("handle", "fopen", "/etc/passwd", "r"))', "extern call 'fopen'"),
    ('B[i] = T.call_pure_extern("float32", "expf", T.call_pure_extern("float32", "getenv", A[i]))',
     "extern call 'getenv'"),
    ('B[i] = T.call_pure_extern("float32", "expf", "x")', "string argument"),
    ('T.evaluate(T.call_packed("runtime.GetDeviceAttr", 1))', "'runtime.GetDeviceAttr' (tirx.tvm_call_packed)"),
    ('T.evaluate(T.call_cpacked("my_func", 1))', "'my_func' (tirx.tvm_call_cpacked)"),
    ('T.evaluate(T.call_llvm_intrin("handle", "llvm.stacksave", T.uint32(0)))', "'llvm.stacksave'"),
    ('T.evaluate(T.call_llvm_intrin("int64", "llvm.x86.rdtsc", T.uint32(0)))', "'llvm.x86.rdtsc'"),
    ('T.evaluate(T.address_of(A[0]))', "'tirx.address_of'"),
    ('T.evaluate(T.tvm_struct_get(T.reinterpret("handle", T.int64(0)), 0, 1, "handle"))', "tvm_struct_get"),
    ('B[i] = T.Cast("float32", T.reinterpret("int64", T.reinterpret("handle", T.uint64(4096))))', "handle"),
]


@pytest.mark.parametrize("body,names", PRIM_ATTACKS, ids=[a[1] for a in PRIM_ATTACKS])
def test_tir_calls_out_of_the_kernel_rejected(body, names):
    with pytest.raises(IRPolicyViolation) as err:
        check_ir(_prim(body))
    assert names in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_extern_message_names_the_allowed_math_functions():
    with pytest.raises(IRPolicyViolation, match=r"extern call 'system' is not allowed \(allowed: math functions "
                                                r"expf, exp, "):
        check_ir(_prim('T.evaluate(T.call_extern("int32", "system", "ls"))'))


@pytest.mark.parametrize("body", [
    'B[i] = T.call_pure_extern("float32", "expf", A[i]) + T.exp(A[i])',
    'B[i] = T.call_extern("float32", "tanhf", A[i]) * T.call_pure_extern("float32", "sqrtf", A[i])',
    'B[i] = T.call_llvm_pure_intrin("float32", "llvm.sqrt.f32", T.uint32(1), A[i])',
    'B[i] = T.call_llvm_pure_intrin("float32", "llvm.fma.f32", T.uint32(3), A[i], A[i], A[i])',
    'B[i] = T.reinterpret("float32", T.reinterpret("int32", A[i]) + 1)',
    'B[i] = T.sigmoid(T.tanh(A[i])) + T.pow(A[i], T.float32(2)) + T.erf(A[i])',
])
def test_math_allowed(body):
    check_ir(_prim(body))


@pytest.mark.parametrize("body,deco,names", [
    ('y = R.call_packed("my.func", x, sinfo_args=R.Tensor((4,), "float32"))', "(pure=False)", "'my.func'"),
    ('y = R.call_pure_packed("my.func", x, ty_args=R.Tensor((4,), "float32"))', "", "relax.call_pure_packed"),
    ('y = R.call_dps_packed("my.func", (x,), out_ty=R.Tensor((4,), "float32"))', "", "relax.call_dps_packed"),
    ('y = R.call_builtin_with_ctx("vm.builtin.x", (x,), ty_args=R.Tensor((4,), "float32"))', "(pure=False)",
     "relax.call_builtin_with_ctx"),
    ('f = R.ExternFunc("system")\n        y = R.add(x, x)', "(pure=False)", "ExternFunc"),
])
def test_graph_packed_calls_rejected(body, deco, names):
    with pytest.raises(IRPolicyViolation, match=names.replace(".", r"\.")):
        check_ir(_graph(body, deco))


def test_graph_call_tir_only_to_own_prim_funcs():
    import tvm

    from leka.methods.tvm_dlight import schedule_graph
    from leka.targets import get_target
    from leka.tasks import get_task

    mod, _, _ = schedule_graph(get_task("l3-ad-autoencoder-b1").build(), get_target("host-cpu"))
    check_ir(mod)
    dropped = next(gv for gv, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc))
    partial = tvm.IRModule({gv: f for gv, f in mod.functions_items() if gv.name_hint != dropped.name_hint})
    with pytest.raises(IRPolicyViolation, match=f"relax.call_tir of '{dropped.name_hint}'"):
        check_ir(partial)
    check_ir(_graph("y = R.add(x, x)"))


def test_shipped_candidates_and_printed_schedules_pass():
    from leka.compiler import default_schedule
    from leka.evaluator.safe_parse import safe_from_source
    from leka.tasks import get_task

    for path in sorted((ROOT / "examples").glob("*/*.py")) + sorted((ROOT / "tests" / "corpus").glob("*.py")):
        text = path.read_text()
        if "# leka:" in text[:300] and path.name != "not_tvmscript.py":
            check_ir(safe_from_source(text))
    for tid in ("l2-linear_bias_gelu-8x384x1536", "l1-max_softmax_prob_score-64x1000", "l2-attention_head-4x128x32"):
        task = get_task(tid)
        for target, rules in (("host-cpu", "naive"), ("host-cpu", "dlight"), ("cuda", "dlight")):
            mod = default_schedule(task.build(), target, rules=rules)
            if mod is not None:
                check_ir(safe_from_source(mod.script()))


def test_worker_rejects_before_building(tmp_path):
    """End to end: the candidate that shells out is a compile_error at stage 'policy'; one outside the
    TVMScript subset a compile_error at stage 'parse'; neither leaves a trace."""
    from leka.evaluator import EvalConfig, Evaluator
    from leka.tasks import get_task

    task = get_task("ex-softmax-512x384")
    base = (ROOT / "tests" / "corpus" / "correct_naive.py").read_text()
    marker = tmp_path / "ran"
    body_start = base.index("    for ")
    shell = base[:body_start] + f'    T.evaluate(T.call_extern("int32", "system", "touch {marker}"))\n' \
        + base[body_start:]
    dunder = base[:body_start] + f'    T.func_attr({{"x": ().__class__.__mro__[1].__subclasses__()}})\n' \
        + base[body_start:]
    with Evaluator("host-cpu", EvalConfig(trials=1, measure=False)) as ev:
        res = ev.evaluate(task, shell)
        assert res.failure == "compile_error" and res.stage == "policy", (res.status, res.error)
        assert "extern call 'system'" in res.error
        res = ev.evaluate(task, dunder)
        assert res.failure == "compile_error" and res.stage == "parse", (res.status, res.error)
        assert "rejected TVMScript: line" in res.error and "__" in res.error
        assert ev.evaluate(task, base).correct
    assert not marker.exists()
