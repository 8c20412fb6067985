"""Shared helpers for the built-in suite: argument specs and a Task constructor with the id scheme.

Task ids read ``l{level}-{pattern}-{shape_tag}`` plus ``-f16`` / ``-i8`` / ``-u8`` ... for a non-fp32 main
dtype; a pattern ending in that same dtype suffix (``dwconv2d_3x3_s1_nhwc_f16``) drops it from the id
part so it is not repeated. ``bytes`` defaults to the compulsory traffic (every input read once, every
output written once), which is what a roofline needs for a single kernel.
TE builders live in the sibling modules (conv, pool, image, quant, elementwise) and are only called
inside ``Task.build`` so listing the suite stays cheap.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from leka.tasks.task import ArgSpec, Task

DTYPE_TAG = {"float32": "f32", "float16": "f16", "int8": "i8", "uint8": "u8", "uint16": "u16", "int32": "i32",
             "int16": "i16"}


def inp(name: str, shape: Sequence[int], dtype: str = "float32", **kw: Any) -> ArgSpec:
    return ArgSpec(name, tuple(int(s) for s in shape), dtype, "input", **kw)


def out(name: str, shape: Sequence[int], dtype: str = "float32") -> ArgSpec:
    return ArgSpec(name, tuple(int(s) for s in shape), dtype, "output")


def u8(name: str, shape: Sequence[int]) -> ArgSpec:
    """Full-range uint8 image input (ArgSpec's integer default stops at 127)."""
    return inp(name, shape, "uint8", low=0, high=256)


def shape_tag(*dims: int | Sequence[int]) -> str:
    flat: list[int] = []
    for d in dims:
        flat.extend(d if isinstance(d, (tuple, list)) else [d])
    return "x".join(str(int(v)) for v in flat)


def make_task(*, level: int, pattern: str, tag: str, domain: str, args: Sequence[ArgSpec],
              build: Callable[[], Any], reference: Callable[..., Any], flops: int, description: str,
              dtype: str | None = None, layout: str = "", bytes_moved: int | None = None,
              rtol: float | None = None, atol: float | None = None, memory_budget_bytes: int | None = None,
              make_inputs: Callable[[np.random.Generator, str], list[np.ndarray]] | None = None,
              tags: Sequence[str] = (), int_tolerance: str = "exact",
              pre_rounding: Callable[..., Any] | None = None) -> Task:
    args = tuple(args)
    main_dtype = dtype or args[0].dtype
    sfx = "" if main_dtype == "float32" else DTYPE_TAG.get(main_dtype, main_dtype)
    if main_dtype == "float16" and "fp32" not in description:
        description += " (fp16 storage, fp32 arithmetic)"
    base = pattern[:-len(sfx) - 1] if sfx and pattern.endswith("_" + sfx) else pattern
    return Task(id=f"l{level}-{base}-{tag}" + (f"-{sfx}" if sfx else ""), pattern=pattern, level=level, domain=domain, args=args,
                build=build, reference=reference, flops=int(flops),
                bytes=int(bytes_moved if bytes_moved is not None else sum(a.nbytes for a in args)),
                dtype=main_dtype, layout=layout, description=description, rtol=rtol, atol=atol,
                memory_budget_bytes=memory_budget_bytes, make_inputs=make_inputs,
                int_tolerance=int_tolerance, pre_rounding=pre_rounding,
                tags=tuple(tags) + (DTYPE_TAG.get(main_dtype, main_dtype),))


def numel(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))
