"""The TVMScript allow-list (leka.evaluator.script_guard) and the builtin-free parse (safe_parse): every code
execution vector of a candidate's text is rejected in one line naming the construct; every correct
candidate the project ships or prints is accepted and parses to the same IR as TVM's own parser."""
from __future__ import annotations

import glob
import random
from pathlib import Path

import pytest

from leka.errors import LekaError
from leka.evaluator.safe_parse import ScriptParseError, _parse_without_builtins, safe_from_source
from leka.evaluator.script_guard import MAX_BRACKET_DEPTH, ScriptRejected, check_script

ROOT = Path(__file__).resolve().parents[1]
HEADER = '''from tvm.script import tirx as T

@T.prim_func
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
'''
BODY = "    for i in range(4):\n        B[i] = A[i]\n"


def _fn(line: str) -> str:
    """A valid function with `line` (one body statement, indented by the caller's text) added."""
    return HEADER + line + "\n" + BODY


# (name, text, what the one-line message must name)
ATTACKS = [
    ("attr value", _fn('    T.func_attr({"x": open("/etc/passwd").read()})'), "name 'open'"),
    ("dunder import", _fn('    T.func_attr({"x": __import__("os").system("id")})'), "'__import__'"),
    ("dunder chain", _fn('    T.func_attr({"x": ().__class__.__mro__[1].__subclasses__()})'), "attribute '__"),
    ("dunder attr only", _fn('    x = A.__class__'), "attribute '__class__'"),
    ("module statement", 'import os\n' + HEADER + BODY, "import"),
    ("module assignment", 'X = 1\n' + HEADER + BODY, "assignment outside a function"),
    ("module call", HEADER + BODY + 'print("hi")\n', "outside a function"),
    ("decorator argument", HEADER.replace("@T.prim_func", '@T.prim_func(private=open("/x"))') + BODY,
     "constant values"),
    ("decorator expression", HEADER.replace("@T.prim_func", "@(T.prim_func if 1 else T.prim_func)") + BODY,
     "decorator"),
    ("other decorator", HEADER.replace("@T.prim_func", "@T.macro") + BODY, "decorator 'T.macro'"),
    ("two decorators", HEADER.replace("@T.prim_func", "@T.prim_func\n@T.prim_func") + BODY, "exactly one"),
    ("default argument", HEADER.replace('"float32")):', '"float32") = 1):') + BODY, "defaults"),
    ("subscript", _fn('    B[len([1])] = A[0]'), "name 'len'"),
    ("f-string", _fn('    T.func_attr({"x": f"{A}"})'), "f-string"),
    ("lambda", _fn('    T.func_attr({"x": (lambda: 1)()})'), "lambda"),
    ("list comprehension", _fn('    T.func_attr({"x": [i for i in [1]]})'), "list comprehension"),
    ("generator", _fn('    T.func_attr({"x": tuple(i for i in [1])})'), "name 'tuple'"),
    ("walrus", _fn('    T.func_attr({"x": (y := 1)})'), "walrus"),
    ("starred call", _fn('    T.reads(*[A[0]])'), "starred"),
    ("kwargs unpack", _fn('    T.func_attr(**{"x": 1})'), "**x"),
    ("global", _fn('    global A'), "global statement"),
    ("nonlocal", _fn('    nonlocal A'), "nonlocal statement"),
    ("del", _fn('    del A'), "del statement"),
    ("try", _fn('    try:\n        pass\n    except Exception:\n        pass'), "try statement"),
    ("raise", _fn('    raise ValueError()'), "raise statement"),
    ("import in function", _fn('    import os'), "import statement"),
    ("class in function", _fn('    class X:\n        pass'), "class definition"),
    ("nested def", _fn('    def f():\n        pass'), "function definition"),
    ("T.meta_var", _fn('    x = T.meta_var(1)'), "'T.meta_var'"),
    ("T parser module", _fn('    x = T.parser'), "module"),
    ("T private", _fn('    x = T._ffi_api'), "attribute '_ffi_api'"),
    ("T external kernel", _fn('    T.call_kernel("x")'), "'T.call_kernel'"),
    ("T.prim_func in body", _fn('    f = T.prim_func(A)'), "only allowed as the decorator"),
    ("I.pyfunc", _fn('    I.pyfunc(A)'), "'I.pyfunc'"),
    ("R.call_py_func", _fn('    R.call_py_func("f", A)'), "'R.call_py_func'"),
    ("R module chain", _fn('    x = R.ir.builtins'), "module"),
    ("bare namespace", _fn('    x = T'), "only be used as a namespace"),
    ("unknown name", _fn('    x = tvm.runtime'), "name 'tvm'"),
    ("power", _fn('    x = 9 ** 9 ** 9'), "'**'"),
    ("huge shift", _fn('    x = 1 << (1 << 40)'), "constant arithmetic"),
    ("huge string", _fn('    x = "a" * (1 << 33)'), "constant arithmetic"),
    ("huge list", _fn('    x = [0] * (1 << 31)'), "repeating a list"),
    ("set literal", _fn('    x = {1, 2}'), "set literal"),
    ("dict outside call", _fn('    x = {"a": 1}'), "dict literal"),
    ("method call", _fn('    x = A.vload([0])'), "call of 'A.vload'"),
    ("attribute target", _fn('    A.data = 1'), "assignment to 'A.data'"),
    ("for-else", _fn('    for i in range(4):\n        pass\n    else:\n        pass'), "for ... else"),
    ("bytes constant", _fn('    x = b"abc"'), "bytes"),
    ("dunder assignment", _fn('    __builtins__ = 1'), "'__builtins__'"),
    ("class with base", 'from tvm.script import ir as I\n@I.ir_module\nclass M(object):\n    pass\n', "bases"),
    ("class body statement", 'from tvm.script import ir as I\n@I.ir_module\nclass M:\n    x = open("/x")\n',
     "assignment in the module class"),
    ("wrong import", 'from tvm.script import tirx as os\n' + HEADER + BODY, "import"),
    ("relative import", 'from . import x\n' + HEADER + BODY, "import"),
    ("async", 'async def main():\n    pass\n', "async function"),
]


@pytest.mark.parametrize("name,text,names", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_rejected_in_one_line_naming_the_construct(name, text, names):
    with pytest.raises(ScriptRejected) as err:
        check_script(text)
    msg = str(err.value)
    assert "\n" not in msg and names in msg, msg
    assert isinstance(err.value, LekaError)  # the CLI maps it to exit 2


def test_rejection_names_the_line():
    with pytest.raises(ScriptRejected, match=r"^line 5: "):
        check_script(_fn('    T.func_attr({"x": open("/etc/passwd")})'))


@pytest.mark.parametrize("text,what", [
    (_fn("    B[0] = " + "(" * (MAX_BRACKET_DEPTH + 5) + "A[0]" + ")" * (MAX_BRACKET_DEPTH + 5)), "brackets nested"),
    (_fn("    B[0] = " + " + ".join(["A[0]"] * 400)), "nested deeper than"),
    (_fn("    B[0] = " + " + ".join(["A[0]"] * 100_000)), "tokens"),
    (_fn("    B[0] = " + "-" * 200_000 + "A[0]"), "nested too deeply"),
    (_fn("    B[0] = " + "T.max(" * 300 + "A[0]" + ", A[0])" * 300), "brackets nested"),
    ("x" * 3_000_000, "characters"),
    (HEADER + "    x = 1\x00\n", "null bytes"),
    ("def main(:\n", "syntax error"),
])
def test_size_and_nesting_limits_are_one_line(text, what):
    with pytest.raises(ScriptRejected) as err:
        check_script(text)
    assert what in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_non_string_input_is_rejected():
    with pytest.raises(ScriptRejected, match="must be a string"):
        check_script(b"bytes")  # type: ignore[arg-type]


# -- builtins are unreachable in the parser even if the allow-list were bypassed --------------------------

@pytest.mark.parametrize("expr", ["open('/etc/passwd')", "__import__('os')", "len([1])", "print(1)",
                                  "globals()", "eval('1')"])
def test_parser_has_no_builtins_even_without_the_guard(expr):
    text = "# " + HEADER + f'    T.func_attr({{"x": {expr}}})\n' + BODY
    with pytest.raises(ScriptParseError, match="Undefined variable"):
        _parse_without_builtins(text)


def test_assignment_targets_are_names_only_in_the_parser(tmp_path):
    marker = tmp_path / "ran"
    text = "# " + HEADER + f'    for B[__import__("pathlib").Path("{marker}").touch() or 0] in T.serial(4):\n        pass\n'
    with pytest.raises(ScriptRejected):
        _parse_without_builtins(text)
    assert not marker.exists()


def test_parser_patch_is_restored():
    from tvm.script.parser.core import evaluator

    before = (evaluator._get_builtin_or_none, evaluator._eval_assign)
    safe_from_source(_fn("    T.func_attr({'tirx.noalias': True})"))
    with pytest.raises(ScriptRejected):
        safe_from_source(_fn("    x = undefined_name"))
    assert (evaluator._get_builtin_or_none, evaluator._eval_assign) == before
    assert evaluator._get_builtin_or_none("len") is len


# -- every correct candidate is accepted ------------------------------------------------------------------

def _shipped_candidates() -> list[Path]:
    files = [Path(p) for p in glob.glob(str(ROOT / "examples" / "*" / "*.py")) + glob.glob(str(ROOT / "tests" /
                                                                                               "corpus" / "*.py"))]
    return sorted(p for p in files if "# leka:" in p.read_text()[:300] and p.name != "not_tvmscript.py")


@pytest.mark.parametrize("path", _shipped_candidates(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_candidates_accepted_and_parse_like_tvm(path):
    import tvm
    import tvm_ffi

    text = path.read_text()
    check_script(text)
    ours = safe_from_source(text)
    theirs = tvm.script.from_source(text.replace("from tvm", "# from tvm"))
    assert tvm_ffi.structural_equal(ours, theirs)


def _printed_scripts(task_ids: list[str]) -> list[tuple[str, str]]:
    from leka.compiler import default_schedule
    from leka.tasks import get_task

    out = []
    for tid in task_ids:
        f = get_task(tid).build()
        out.append((f"{tid}/plain", f.script()))
        if get_task(tid).level == 3:
            continue
        for target, rules in (("host-cpu", "dlight"), ("cuda", "naive"), ("cuda", "dlight")):
            try:
                mod = default_schedule(f, target, rules=rules)
            except Exception:  # noqa: BLE001  (a baseline that does not schedule this task prints nothing)
                continue
            if mod is not None:
                out.append((f"{tid}/{target}-{rules}", mod.script()))
    return out


def _task_sample(n: int, seed: int) -> list[str]:
    from leka.tasks import all_tasks

    tasks = all_tasks()
    graphs = [t.id for t in tasks if t.level == 3][:2]
    return graphs + [t.id for t in random.Random(seed).sample([t for t in tasks if t.level < 3], n)]


def test_printed_suite_scripts_accepted_sample():
    for name, text in _printed_scripts(_task_sample(6, seed=10)):
        try:
            safe_from_source(text)
        except ScriptRejected as e:
            pytest.fail(f"{name}: {e}")


@pytest.mark.slow
def test_printed_suite_scripts_accepted_wide():
    rejected = []
    for name, text in _printed_scripts(_task_sample(50, seed=11)):
        try:
            check_script(text)
        except ScriptRejected as e:
            rejected.append(f"{name}: {e}")
    assert not rejected, rejected[:5]


def test_scheduled_graph_and_offline_proposals_accepted():
    from leka.ir import CandidateIR
    from leka.methods.tvm_dlight import schedule_graph
    from leka.proposers import OfflineProposer, ProposalRequest
    from leka.targets import get_target
    from leka.tasks import get_task

    mod, _, _ = schedule_graph(get_task("l3-ad-autoencoder-b1").build(), get_target("host-cpu"))
    safe_from_source(mod.script())
    task = get_task("ex-softmax-512x384")
    for layer in ("schedule", "memory"):
        for p in OfflineProposer().propose(ProposalRequest(layer, CandidateIR.initial(task), task, "host-cpu",
                                                           [], 2)):
            safe_from_source(p.ir.to_tvmscript("host-cpu"))


def test_model_algorithm_text_is_checked_in_the_isolated_parser(tmp_path):
    """leka.ir.isolated parses a model's algorithm text with the same guard: rejected in one line, no trace."""
    from leka.ir import CandidateIR
    from leka.ir.isolated import run_isolated
    from leka.tasks import get_task

    task = get_task("ex-softmax-512x384")
    text = (ROOT / "tests" / "corpus" / "correct_naive.py").read_text()
    marker = tmp_path / "ran"
    bad = text.replace('T.func_attr({"tirx.noalias": True})',
                       f'T.func_attr({{"x": __import__("os").system("touch {marker}")}})')
    assert bad != text
    for t, errors in ((text, []), (bad, ["algorithm text rejected: line 7: name '__import__' is not allowed "
                                         "(no dunder names)"])):
        ir = CandidateIR.initial(task).with_layer("algorithm", {"kind": "tvmscript", "text": t})
        assert run_isolated("validate", ir, "host-cpu")["errors"] == errors
    assert not marker.exists()
