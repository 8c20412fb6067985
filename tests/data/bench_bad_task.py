"""A user task whose reference is wrong on purpose: `leka bench validate` must fail it."""
from leka.tasks.task import ArgSpec, Task


def _add_def(n):
    from tvm import te

    a = te.placeholder((n,), "float32", name="a")
    b = te.placeholder((n,), "float32", name="b")
    return te.create_prim_func([a, b, te.compute((n,), lambda i: a[i] + b[i], name="c")])


TASKS = [
    Task(id="benchbad-add-64", pattern="benchbad", level=1, domain="nlp",
         args=(ArgSpec("a", (64,), "float32"), ArgSpec("b", (64,), "float32"), ArgSpec("c", (64,), "float32", "output")),
         build=lambda: _add_def(64), reference=lambda a, b: a - b, flops=64, bytes=3 * 64 * 4),
]
