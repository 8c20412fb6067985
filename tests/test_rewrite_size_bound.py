"""The size bound of the offline algorithm rewrites: a function that would outgrow it is not built (inlining is
skipped) or is rejected with a one-line reason before anything parses it."""
from __future__ import annotations

import pytest


def test_an_oversized_rewrite_is_rejected_in_one_line_before_parsing():
    from leka.evaluator.script_guard import ScriptRejected
    from leka.proposers.offline.algorithm.common import MAX_SCRIPT_CHARS, check_script_size

    with pytest.raises(ScriptRejected) as err:
        check_script_size("# x\n" * (MAX_SCRIPT_CHARS // 4 + 1), "alg.test")
    assert "\n" not in str(err.value) and "alg.test" in str(err.value) and "rejected before parsing" in str(err.value)


def test_inlining_is_skipped_when_copies_would_outgrow_the_bound():
    from tvm import s_tir, te

    from leka.proposers.offline.algorithm.common import inline_fits

    a = te.placeholder((64,), name="A")
    b = te.compute((62,), lambda i: a[i] + a[i + 1] * 2.0 + a[i + 2], name="B")
    c = te.compute((60,), lambda i: b[i] * b[i + 1] + b[i + 2], name="C")
    sch = s_tir.Schedule(te.create_prim_func([a, c]))
    size = len(sch.mod["main"].script())
    assert inline_fits(sch, sch.get_sblock("B"))
    assert not inline_fits(sch, sch.get_sblock("B"), limit=size + 10)


def test_a_bounded_inline_leaves_the_schedule_as_it_was_when_it_would_outgrow_the_bound():
    from tvm import s_tir, te

    from leka.proposers.offline.algorithm.common import inline_bounded

    a = te.placeholder((64,), name="A")
    b = te.compute((62,), lambda i: a[i] + a[i + 1] * 2.0 + a[i + 2], name="B")
    c = te.compute((60,), lambda i: b[i] * b[i + 1] + b[i + 2], name="C")
    sch = s_tir.Schedule(te.create_prim_func([a, c]))
    before = sch.mod["main"].script()
    inlined = inline_bounded(sch, "B")
    assert inlined is not None and "B" not in [inlined.get(x).name_hint for x in
                                               inlined.get_child_blocks(inlined.get_sblock("root"))]
    assert inline_bounded(sch, "B", limit=len(before)) is None  # the copies make it longer
    assert sch.mod["main"].script() == before  # the original schedule is untouched either way
