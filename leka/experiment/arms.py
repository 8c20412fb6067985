"""The agent-vs-baseline table per arm (one row per method entry of an experiment): Correct@1, Correct@3,
Fast@1.0 beyond noise, the geometric-mean speedup with a bootstrap 95 % interval over tasks, model calls,
tokens and wall time, and the menu picks by the position they were shown at (position bias).

The geomean here counts every final sample: a correct kernel at its measured speedup, anything else (a
failure, no kernel made) at 1.0x, the baseline the user keeps. Intervals resample tasks (each task's samples
stay together), seeded, so a rerun of the report gives the same figures.
"""
from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

from leka.bench import metrics

BOOTSTRAP_DRAWS = 2000
ARM_HEAD = ["arm", "proposer", "tasks", "samples", "Correct@1", "Correct@3", "Fast@1.0", "geomean",
            "95% CI", "calls", "tokens", "wall min", "picks by position"]


def shipped_log(r: dict[str, Any]) -> float:
    """log speedup of what the attempt leaves the user with: its kernel if correct, else the baseline."""
    speedup = r.get("speedup")
    return math.log(speedup) if metrics.is_correct(r) and isinstance(speedup, (int, float)) and speedup > 0 else 0.0


def _task_logs(records: list[dict[str, Any]]) -> list[float]:
    by_task: dict[str, list[float]] = {}
    for r in records:
        by_task.setdefault(str(r.get("task")), []).append(shipped_log(r))
    return [sum(v) / len(v) for v in by_task.values()]


def geomean_ci(records: list[dict[str, Any]], draws: int = BOOTSTRAP_DRAWS,
               seed: int = 0) -> tuple[float | None, float | None, float | None]:
    """(geomean, low, high): the per-task mean log speedup averaged over tasks, and its bootstrap 95 %
    percentile interval over tasks."""
    logs = _task_logs(records)
    if not logs:
        return None, None, None
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(logs) for _ in logs) / len(logs) for _ in range(draws))
    low, high = means[int(0.025 * (draws - 1))], means[int(0.975 * (draws - 1))]
    return math.exp(sum(logs) / len(logs)), math.exp(low), math.exp(high)


def pick_positions(records: list[dict[str, Any]]) -> Counter[int]:
    """How often each shown menu position was picked, over the attempts' menu picks (leka's final samples
    carry them in meta.menu_picks)."""
    out: Counter[int] = Counter()
    for r in records:
        for pick in (r.get("meta") or {}).get("menu_picks") or ():
            if isinstance(pick, dict) and isinstance(pick.get("position"), int):
                out[pick["position"]] += 1
    return out


def _spent(records: list[dict[str, Any]], kind: str) -> float:
    return sum(float((r.get("budget") or {}).get(kind) or 0) for r in records)


def arm_row(label: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    s = metrics.summarize(records, ks=(1, 3), fast_ps=(1.0,))
    geo, low, high = geomean_ci(records)
    return {"arm": label, "tasks": s.tasks, "samples": s.samples,
            "proposer": ", ".join(sorted({str(r.get("proposer")) for r in records if r.get("proposer")})) or "-",
            "Correct@1": s.correct_at_1, "Correct@3": s.correct_at_k.get("Correct@3"),
            "Fast@1.0": s.fast_at.get("Fast@1.0"), "geomean": geo, "ci": [low, high],
            "calls": _spent(records, "calls"), "tokens": _spent(records, "tokens"),
            "minutes": _spent(records, "minutes"), "positions": dict(sorted(pick_positions(records).items()))}


def arm_cells(row: dict[str, Any]) -> list[str]:
    from leka.cli.tables import fmt_cell

    low, high = row["ci"]
    ci = f"{low:.2f}-{high:.2f}" if low is not None else "-"
    positions = " ".join(f"{p}:{n}" for p, n in row["positions"].items()) or "-"
    return [row["arm"], row["proposer"], str(row["tasks"]), str(row["samples"]), fmt_cell(row["Correct@1"], True),
            fmt_cell(row["Correct@3"], True), fmt_cell(row["Fast@1.0"], True), fmt_cell(row["geomean"]), ci,
            f"{row['calls']:.0f}", f"{row['tokens']:.0f}", f"{row['minutes']:.1f}", positions]


def model_line(runs: list[Any]) -> str:
    """The report's first line: which model produced the model arms (or that none did)."""
    models = sorted({str(p.options["llm"]) for p in runs if p.options.get("llm") not in (None, "", "offline")})
    with_model = sorted({p.label for p in runs if p.options.get("llm") not in (None, "", "offline")})
    if not models:
        return "Model: none - every arm ran without a model (offline rules or menu controls)."
    return (f"Model: {', '.join(models)} (arms {', '.join(with_model)}); every other arm ran without a model, "
            "and no offline or replayed output is counted as the model's.")


def positions_plot(rows: list[dict[str, Any]]) -> str | None:
    """Base64 PNG: share of picks at each shown position, per arm with menu picks (None if none has)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["positions"]]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.8 / len(rows)
    for i, row in enumerate(rows):
        total = sum(row["positions"].values())
        xs = sorted(row["positions"])
        ax.bar([x + i * width for x in xs], [row["positions"][x] / total for x in xs], width, label=row["arm"])
    ax.set_xlabel("menu position shown (0 = first)")
    ax.set_ylabel("share of picks")
    ax.legend(fontsize=8)
    ax.set_title("Menu picks by shown position (uniform = no position bias)")
    return png_b64(fig)


def png_b64(fig: Any) -> str:
    """A matplotlib figure as base64 PNG for a self-contained HTML report (the figure is closed)."""
    import base64
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()
