"""Shared runner pieces: errors and argument checks."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from leka.errors import LekaError


class RunnerError(LekaError):
    """The artifact could not be loaded or run (bad arguments, device error)."""


def check_arrays(params: list[tuple[str, tuple[int, ...], str]], arrays: Sequence[np.ndarray],
                 allow_inputs_only: int | None = None) -> list[np.ndarray]:
    """Contiguous arrays matching the params (shape and dtype), in order."""
    arrays = list(arrays)
    if len(arrays) != len(params) and len(arrays) != (allow_inputs_only or -1):
        raise RunnerError(f"expected {len(params)} arrays (one per param: "
                          f"{', '.join(n for n, _, _ in params)}), got {len(arrays)}")
    out = []
    for (name, shape, dtype), a in zip(params, arrays):
        a = np.asarray(a)
        if tuple(a.shape) != tuple(shape) or str(a.dtype) != dtype:
            raise RunnerError(f"param {name}: expected {dtype}{list(shape)}, got {a.dtype}{list(a.shape)}")
        out.append(np.asarray(a, order="C"))
    return out
