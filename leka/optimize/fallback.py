"""One broken winner never sinks the model: when the build with the winners fails (the build job errs, or its
outputs disagree with ONNX Runtime), the replaced kernels are bisected to find the offending ones, which keep
their default build; the rest are kept and a verified artifact is still written.

`settle` tries the kernels in halves (a half that builds is kept, one that fails is split again, each try on top
of what was kept so far), so k broken winners among n cost about k*log2(n) extra builds, and a pair that only
fails together is caught too (the second of the two is dropped). What is dropped, and the one-line reason each
try failed with, goes into the manifest ("dropped").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

from leka.errors import one_line

from . import BuildFailedError, VerificationError

T = TypeVar("T")
FAILURES = (BuildFailedError, VerificationError)  # what a winner can cause; other errors (time, input) propagate


@dataclass
class Settled(Generic[T]):
    value: T  # what the last successful attempt returned (the build with `kept`)
    kept: list[str]
    dropped: dict[str, str]  # kernel key -> why (the failure of the smallest try that still failed)
    tries: int


def settle(attempt: Callable[[list[str], bool], T], keys: list[str]) -> Settled[T]:
    """Attempt the build with every key; on a FAILURES error, bisect. `attempt(keys, final)` builds with those
    keys' winners (final: the build that is kept, e.g. timed). Raises the first failure when even the build with
    no winner fails (the model itself does not build)."""
    tries = {"n": 0}
    results: dict[frozenset[str], T] = {}
    failures: dict[frozenset[str], str] = {}

    def run(subset: list[str], final: bool) -> bool:
        key = frozenset(subset)
        if key in failures:
            return False
        if key in results and not final:
            return True
        tries["n"] += 1
        try:
            results[key] = attempt(sorted(subset), final)
            return True
        except FAILURES as e:
            failures[key] = one_line(e, 300)
            if not subset:
                raise
            return False

    if run(keys, True):
        return Settled(results[frozenset(keys)], list(keys), {}, tries["n"])
    dropped: dict[str, str] = {}
    kept = _bisect(run, keys, [], dropped, failures)
    run(kept, True)  # the kept build, as the final one (timed); a failure here raises (the model does not build)
    if frozenset(kept) not in results:
        raise BuildFailedError(failures[frozenset(kept)])
    return Settled(results[frozenset(kept)], kept, dropped, tries["n"])


def _bisect(run: Callable[[list[str], bool], bool], keys: list[str], base: list[str], dropped: dict[str, str],
            failures: dict[frozenset[str], str]) -> list[str]:
    """The keys of `keys` that build on top of `base` (known good), the others recorded in `dropped`."""
    if not keys:
        return []
    if run(base + keys, False):
        return list(keys)
    if len(keys) == 1:
        dropped[keys[0]] = failures[frozenset(base + keys)]
        return []
    half = len(keys) // 2
    first = _bisect(run, keys[:half], base, dropped, failures)
    return first + _bisect(run, keys[half:], base + first, dropped, failures)
