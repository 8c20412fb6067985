"""check_nondegenerate: accepts real workloads, rejects degenerate ones with a reason."""
from __future__ import annotations

import numpy as np

from leka.tasks.nondegenerate import check_nondegenerate
from leka.tasks.task import ArgSpec, Task


def _task(reference, args, **kw) -> Task:
    return Task(id="t-test", pattern="test", level=1, domain="vision", args=tuple(args), build=lambda: None,
                reference=reference, flops=1, bytes=1, **kw)


X = ArgSpec("X", (8, 16), "float32")
B = ArgSpec("B", (8, 16), "float32")
Y = ArgSpec("Y", (8, 16), "float32", "output")


def test_real_workload_passes():
    assert check_nondegenerate(_task(lambda x, b: np.maximum(x + b, 0), [X, B, Y])) == []


def test_softmax_after_global_mean_is_rejected_as_near_constant():
    # The classic trap: a global mean of random inputs is ~0, so the softmax over (mean + tiny) is flat.
    def ref(x):
        m = x.mean(axis=1, keepdims=True) * 1e-6
        e = np.exp(m - m.max())
        return np.broadcast_to(e / e.sum(), (8, 16))
    reasons = check_nondegenerate(_task(ref, [X, Y]))
    assert reasons and all("near-constant" in r for r in reasons), reasons


def test_ignored_input_is_named():
    reasons = check_nondegenerate(_task(lambda x, b: x * 2.0, [X, B, Y]))
    assert any("do not depend on input B" in r for r in reasons), reasons


def test_zero_output_is_rejected():
    reasons = check_nondegenerate(_task(lambda x: x - x, [X, Y]))
    assert any("within tolerance of zero" in r for r in reasons), reasons


def test_integer_output_all_zero_after_clamp_is_rejected():
    q = ArgSpec("Q", (64,), "int8")
    out = ArgSpec("R", (64,), "int8", "output")
    # clamp to [0, 0]: a 'relu6' with a zero quantised range
    reasons = check_nondegenerate(_task(lambda q_: np.clip(q_, 0, 0), [q, out]))
    assert any("within tolerance of zero" in r for r in reasons), reasons


def test_output_reacting_to_no_input_is_reported():
    y2 = ArgSpec("Y2", (8, 16), "float32", "output")
    # second output is a fixed pattern: varied and non-zero, but independent of every input
    const = np.arange(128, dtype=np.float32).reshape(8, 16)
    reasons = check_nondegenerate(_task(lambda x: (x * 3.0, const), [X, Y, y2]))
    assert any("output Y2 reacts to no input" in r for r in reasons), reasons


def test_non_finite_reference_is_reported():
    def ref(x):
        with np.errstate(invalid="ignore"):
            return np.log(x)  # log of negative normals -> nan
    reasons = check_nondegenerate(_task(ref, [X, Y]))
    assert any("non-finite" in r for r in reasons), reasons


def test_shipped_user_example_loads_and_is_nondegenerate():
    from pathlib import Path

    from leka.tasks import load_task_file

    path = Path(__file__).resolve().parents[1] / "examples" / "user_tasks" / "scaled_tanh.py"
    tasks = load_task_file(path)
    assert [t.id for t in tasks] == ["l1-scaled_tanh-1x64x64x32"]
    assert check_nondegenerate(tasks[0]) == []
