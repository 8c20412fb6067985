"""Two tiny user tasks for the bench harness tests (fast to build and check)."""
from leka.tasks.task import ArgSpec, Task


def _add_def(n):
    from tvm import te

    a = te.placeholder((n,), "float32", name="a")
    b = te.placeholder((n,), "float32", name="b")
    c = te.compute((n,), lambda i: a[i] + b[i], name="c")
    return te.create_prim_func([a, b, c])


def _gemv_def(m, n):
    from tvm import te

    a = te.placeholder((m, n), "float32", name="a")
    x = te.placeholder((n,), "float32", name="x")
    k = te.reduce_axis((0, n), name="k")
    y = te.compute((m,), lambda i: te.sum(a[i, k] * x[k], axis=k), name="y")
    return te.create_prim_func([a, x, y])


TASKS = [
    Task(id="benchtest-add-64", pattern="benchtest", level=1, domain="nlp",
         args=(ArgSpec("a", (64,), "float32"), ArgSpec("b", (64,), "float32"), ArgSpec("c", (64,), "float32", "output")),
         build=lambda: _add_def(64), reference=lambda a, b: a + b, flops=64, bytes=3 * 64 * 4),
    Task(id="benchtest-gemv-32x64", pattern="benchtest", level=1, domain="nlp",
         args=(ArgSpec("a", (32, 64), "float32"), ArgSpec("x", (64,), "float32"), ArgSpec("y", (32,), "float32", "output")),
         build=lambda: _gemv_def(32, 64), reference=lambda a, x: a @ x, flops=2 * 32 * 64,
         bytes=4 * (32 * 64 + 64 + 32)),
]
