"""The end-to-end comparison of `leka optimize`'s builds (the optimised one, tvm-naive, tvm-dlight, ONNX Runtime):
interleaved over rounds in one process, each round's figure the median of its batches, medians and spreads across
rounds (timing_verdict.py reads them). Run by the build job (build_job.main) and by experiments that re-time
artifacts side by side.
"""
from __future__ import annotations

import os
import statistics
import threading
import time
from typing import Any, Callable

import numpy as np

from leka.evaluator.cpu_time import thread_times
from leka.evaluator.sandbox import thread_priority

MIN_BATCHES = 3  # batches a round makes at least, unless one batch already outlasts the round
ROUNDS = 5  # rounds of the end-to-end comparison; medians and spreads are across them (timing_verdict.py)
# builds faster than this a call get one untimed call before each batch, all alike (slower ones: the warm-up
# would cost a round's time, and a cold start is a small share of their call)
WARM_CALL_S = 0.05
# a batch: this long of timed calls of one build in a row, at least one call. 2 ms batches timed a 1.05 ms
# squeezenet build at 1.50 ms and ONNX Runtime's 0.47 ms at 0.59 (one call after another build's is slow:
# threads asleep, caches cold); 10 ms batches: 1.20 and 0.53, same run
BATCH_S = 0.01
RUNNERS = 4  # the builds timed: optimised, tvm-naive, tvm-dlight, ONNX Runtime
# A comparison build (tvm-naive, tvm-dlight) this slow a call is timed in SLOW_COMPARISON_ROUNDS rounds: light_vgg19's
# take 24 and 17 s a call, and 5 rounds of them were 3.5 of its minutes=10 (the optimised build and ONNX Runtime,
# the figure the run is for, still get every round)
SLOW_COMPARISON_S = 1.0
SLOW_COMPARISON_ROUNDS = 2
SETTLE_MAX_S = 0.25  # the longest wait for the last build's threads to stop running before a batch
SETTLE_POLL_S = 0.002


def round_s(min_time_s: float, runners: int = RUNNERS, rounds: int = ROUNDS) -> float:
    """How long a round of the comparison lasts at least."""
    return min_time_s * runners / rounds


def batches_per_round(visit_s: float, round_len_s: float) -> int:
    """Batches a round makes at least: MIN_BATCHES, or one when a batch (one visit of every build) outlasts the
    round. The default and dlight builds of an unscheduled CNN take seconds a call: inception_v1's 3 batches x 5
    rounds were ~77 s of its 10 minutes; one batch a round still gives ROUNDS figures across rounds, which is
    where the median and spread come from."""
    return 1 if visit_s > round_len_s else MIN_BATCHES


def timing_reserve_s(default_s: float, time_s: float) -> float:
    """What the end-to-end comparison may take, `default_s` being one call of the default build (dlight's about
    the same) and the optimised build taken as no faster. With comparison builds of seconds a call: each one's
    first call (its batch size), then SLOW_COMPARISON_ROUNDS rounds of the three; the optimised build's further
    rounds fit when it is faster, and no round starts past the deadline (alternate)."""
    visit = 3 * default_s
    if default_s < SLOW_COMPARISON_S:
        return 4 * time_s + ROUNDS * batches_per_round(visit, round_s(time_s)) * visit
    return 4 * time_s + (1 + SLOW_COMPARISON_ROUNDS) * visit


def alternate(runners: dict[str, Callable[[list[np.ndarray]], Any]], inputs: list[np.ndarray],
              rounds: int = ROUNDS, min_time_s: float = 1.0, min_batches: int | None = None,
              deadline: float | None = None,
              comparisons: tuple[str, ...] = ()) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each runner's median ms per call over `rounds` rounds, and the host's load around the timing. A round
    lasts min_time_s * len(runners) / rounds and is made of batches (BATCH_S of calls per runner) visiting the
    runners in a fresh random order, so machine load and the scheduler's time slices fall on all of them
    alike; the round's figure is the median of its batches, and the reported median and spread are across
    rounds (the spread within a round hid 2x swings between identical runs on a loaded host). A batch of a
    build under WARM_CALL_S a call starts with one untimed call (_one_round). While some
    build's rounds still spread wider than timing_verdict.SPREAD_WARN, up to as many rounds again are run
    (the median of 10 swinging rounds moves less than that of 5). `deadline` (time.time()): no round starts
    that would end past it, so a model whose default build takes seconds a call is timed over fewer rounds
    (the figures say how many) instead of running past --budget minutes. Runners named in `comparisons` whose
    call takes SLOW_COMPARISON_S or more are timed in the first SLOW_COMPARISON_ROUNDS rounds only (their rows
    say so)."""
    from .timing_verdict import SPREAD_WARN

    number, per_call = _batch_sizes(runners, inputs)
    warm = {n for n, t in per_call.items() if t < WARM_CALL_S}
    capped = {n for n in comparisons if n in runners and per_call[n] >= SLOW_COMPARISON_S}
    samples: dict[str, list[list[float]]] = {n: [] for n in runners}
    rng = np.random.default_rng(0)
    round_len = round_s(min_time_s, len(runners), rounds)
    if min_batches is None:
        min_batches = batches_per_round(sum(per_call[n] * number[n] for n in runners), round_len)
    host: dict[str, Any] = {"cores": os.cpu_count() or 1, "load_before": os.getloadavg()[0]}
    # this process's threads (TVM's pool, ORT's) at the evaluator's timing priority, as its kernels are timed
    with thread_priority(os.getpid()):
        t_start, last_round_s, planned_s, settled = time.perf_counter(), 0.0, 0.0, 0.0
        last_visited: Any = runners.keys()
        dropped: set[str] = set()  # slow comparisons no longer visited
        while True:
            done = max(len(v) for v in samples.values())
            if done == rounds:
                planned_s = time.perf_counter() - t_start
            uncapped = {n: v for n, v in samples.items() if n not in capped}
            if done >= rounds and (done >= 2 * rounds or _spread_within(uncapped, SPREAD_WARN)):
                break
            if done >= SLOW_COMPARISON_ROUNDS:
                dropped |= capped
            # an extra round leaves as much time before the deadline as the planned rounds took (a withheld
            # or bisected build after this one is timed again); a slow comparison's round that does not fit
            # leaves those builds with the rounds they had, and the rest go on
            if done and deadline is not None and capped - dropped and \
                    time.time() + last_round_s + planned_s > deadline:
                dropped |= capped
            visited = {n: r for n, r in runners.items() if n not in dropped}
            if done and deadline is not None and time.time() + planned_s + (
                    last_round_s if visited.keys() == last_visited else
                    round_len + sum(per_call[n] * number[n] for n in visited)) > deadline:
                if done < rounds:
                    host["cut_short"] = f"{done} of {rounds} rounds: the budget's minutes"
                break
            t_round = time.perf_counter()
            settled += _one_round(visited, inputs, number, samples, rng, min_batches, round_len, warm)
            last_round_s, last_visited = time.perf_counter() - t_round, visited.keys()
    host["load_after"] = os.getloadavg()[0]
    host["settle_s"] = round(settled, 3)  # waited for one build's threads to stop before the next batch
    if capped:
        host["comparisons_capped"] = sorted(capped)
    if done > rounds:
        host["extra_rounds"] = done - rounds
    return {n: _stats(v) for n, v in samples.items()}, host


def _batch_sizes(runners: dict[str, Callable[[list[np.ndarray]], Any]],
                 inputs: list[np.ndarray]) -> tuple[dict[str, int], dict[str, float]]:
    """Calls per batch of each runner (BATCH_S of calls) and the seconds one call took, after a warm-up call; a
    warm-up call of SLOW_COMPARISON_S or more is the figure (a cold call is a small share of such a call)."""
    per_call: dict[str, float] = {}
    for name, run in runners.items():
        t0 = time.perf_counter()
        run(inputs)
        per_call[name] = time.perf_counter() - t0
        if per_call[name] < SLOW_COMPARISON_S:
            t0 = time.perf_counter()
            run(inputs)
            per_call[name] = time.perf_counter() - t0
    return {n: max(1, int(BATCH_S / max(t, 1e-6))) for n, t in per_call.items()}, per_call


def settle(max_s: float = SETTLE_MAX_S) -> float:
    """Waits until no thread of this process but the caller has run for SETTLE_POLL_S (the last build's pool
    has stopped spinning: ONNX Runtime's workers run on ~40 ms after a call), at most max_s; the seconds waited."""
    pid, me, t0 = os.getpid(), threading.get_native_id(), time.perf_counter()
    before = thread_times(pid)
    while time.perf_counter() - t0 < max_s:
        time.sleep(SETTLE_POLL_S)
        now = thread_times(pid)
        ran = max((run - before.get(tid, (0.0, 0.0))[0] for tid, (run, _wait) in now.items() if tid != me),
                  default=0.0)
        if ran < 0.1 * SETTLE_POLL_S:
            break
        before = now
    return time.perf_counter() - t0


def _one_round(runners: dict[str, Callable[[list[np.ndarray]], Any]], inputs: list[np.ndarray],
               number: dict[str, int], samples: dict[str, list[list[float]]], rng: np.random.Generator,
               min_batches: int, round_len: float, warm: set[str]) -> float:
    """One round of batches in fresh random orders, appended to `samples`; returns the seconds spent waiting
    for the previous batch's threads (settle). A batch of a build in `warm` starts with one untimed call: the
    build visited before it has evicted its weights from the caches and its threads sleep (ONNX Runtime's
    0.47 ms squeezenet: 0.72-0.84 ms in 2 ms batches without it, 0.53-0.65 with)."""
    order = list(runners)
    for name in order:
        samples[name].append([])
    t_round, batches, settled = time.perf_counter(), 0, 0.0
    while batches < min_batches or time.perf_counter() - t_round < round_len:
        rng.shuffle(order)
        for name in order:
            settled += settle()
            if name in warm:
                runners[name](inputs)
            t0 = time.perf_counter()
            for _ in range(number[name]):
                runners[name](inputs)
            samples[name][-1].append((time.perf_counter() - t0) / number[name] * 1e3)
        batches += 1
    return settled


SPREAD_FLOOR_MS = 0.005  # rounds differing by less than this are alike whatever their ratio (timer noise)


def _spread_within(samples: dict[str, list[list[float]]], limit: float) -> bool:
    """Every runner's rounds so far (their medians, _stats) span at most `limit` of their median, or under
    SPREAD_FLOOR_MS."""
    for per_round in samples.values():
        st = _stats(per_round)
        if max(st["round_ms"]) - min(st["round_ms"]) > SPREAD_FLOOR_MS and st["range_rel"] > limit:
            return False
    return True


def _stats(per_round: list[list[float]]) -> dict[str, Any]:
    """Median, spread (IQR and range over the median) across rounds of the rounds' medians."""
    meds = [statistics.median(v) for v in per_round]
    med = statistics.median(meds)
    q = np.percentile(meds, [25, 75])
    rel = (lambda x: float(x / med) if med > 0 else 0.0)
    return {"median_ms": med, "min_ms": min(min(v) for v in per_round), "rounds": len(meds),
            "iqr_rel": rel(q[1] - q[0]), "range_rel": rel(max(meds) - min(meds)), "round_ms": meds,
            "batches": sum(len(v) for v in per_round)}
