"""The paper's table for an experiment: per method (row label), backend (target) and level — Correct@1,
Fast@p for p in 0.5, 0.8, 1.0, 1.5, 2.0 (leka.bench.metrics: fast only beyond the sample's measured
noise, as `metrics.is_fast` defines it), geomean speedup, and the budget actually spent (sum over the
final samples of what each attempt charged: compiles, measurements, model calls, tokens, minutes).
Written as table.md, report.html (tables + plots, the suite report's helpers) and results.json.
"""
from __future__ import annotations

import html
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from leka.bench import metrics
from leka.cli.tables import fmt_cell, html_table, markdown_table

from .arms import ARM_HEAD, arm_cells, arm_row, model_line, png_b64, positions_plot

FAST_PS = (0.5, 0.8, 1.0, 1.5, 2.0)
SPENT_KINDS = ("compiles", "measurements", "calls", "tokens", "minutes")
HEAD = (["method", "backend", "level", "tasks", "Correct@1"] + [f"Fast@{p}" for p in FAST_PS]
        + ["geomean", "proposer"] + [f"spent {k}" for k in SPENT_KINDS])


def spent_total(records: list[dict[str, Any]]) -> dict[str, float]:
    out = {k: 0.0 for k in SPENT_KINDS}
    for r in records:
        for k in SPENT_KINDS:
            out[k] += float((r.get("budget") or {}).get(k) or 0)
    return out


def _row(label: str, backend: str, level: str, recs: list[dict[str, Any]]) -> dict[str, Any]:
    s = metrics.summarize(recs, fast_ps=FAST_PS)
    return {"method": label, "backend": backend, "level": level, "tasks": s.tasks, "samples": s.samples,
            "Correct@1": s.correct_at_1, **{f"Fast@{p}": s.fast_at[f"Fast@{p:.1f}"] for p in FAST_PS},
            "geomean": s.geomean_speedup, "baseline": s.baseline,
            "proposer": ", ".join(sorted({str(r.get("proposer")) for r in recs if r.get("proposer")})) or "-",
            "spent": spent_total(recs)}


def table_rows(groups: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """groups: row label -> the final samples of that method entry (all targets)."""
    rows = []
    for label, recs in groups.items():
        by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for r in recs:
            by[(str(r.get("target")), "all")].append(r)
            by[(str(r.get("target")), f"L{r.get('level')}")].append(r)
        for (backend, level) in sorted(by, key=lambda k: (k[0], k[1] != "all", k[1])):
            rows.append(_row(label, backend, level, by[(backend, level)]))
    return rows


def _cells(row: dict[str, Any]) -> list[str]:
    sp = row["spent"]
    return ([row["method"], row["backend"], row["level"], str(row["tasks"]), fmt_cell(row["Correct@1"], True)]
            + [fmt_cell(row[f"Fast@{p}"], True) for p in FAST_PS] + [fmt_cell(row["geomean"]), row["proposer"]]
            + [f"{sp[k]:.1f}" if k == "minutes" else f"{sp[k]:.0f}" for k in SPENT_KINDS])


def _plot(groups: dict[str, list[dict[str, Any]]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from leka.bench.report import FAST_CURVE_P

    fig, ax = plt.subplots(figsize=(7, 3.8))
    for label, recs in groups.items():
        ax.plot(FAST_CURVE_P, [metrics.fast_at_p(recs, p) or 0.0 for p in FAST_CURVE_P], label=label)
    ax.set_xlabel("p (speedup threshold vs tvm-naive)")
    ax.set_ylabel("Fast@p")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Fast@p per method (final samples)")
    return png_b64(fig)


TUNING_HEAD = ["target", "layer", "variant", "Fast@1.0", "geomean", "Correct@1", "tasks", "run"]


def _tuning(tuning: dict[str, Any]) -> tuple[list[list[str]], str]:
    rows = [[t["target"], t["layer"], t["variant"], fmt_cell(t["Fast@1.0"], True), fmt_cell(t.get("geomean")),
             fmt_cell(t["Correct@1"], True), str(t["tasks"]), t["run_id"]] for t in tuning["trials"]]
    chosen = "; ".join(f"{tg}: " + ", ".join(f"{layer}={v}" for layer, v in ch.items())
                       for tg, ch in tuning["chosen"].items())
    return rows, (f"Chosen prompt variants (highest Fast@1.0 on {tuning['dev_split']}; ties: higher geomean, "
                  f"then the earlier variant): {chosen}. The main table runs them on the test split.")


def _tuning_md(tuning: dict[str, Any] | None) -> list[str]:
    if not tuning:
        return []
    rows, text = _tuning(tuning)
    return ["## Prompt tuning (on the dev split)", "", markdown_table(TUNING_HEAD, rows), "", text, ""]


def _tuning_html(tuning: dict[str, Any] | None) -> str:
    if not tuning:
        return ""
    rows, text = _tuning(tuning)
    return "<h2>Prompt tuning (on the dev split)</h2>" + html_table(TUNING_HEAD, rows) + f"<p>{html.escape(text)}</p>"


def write_experiment_report(cfg: Any, store: Any, result: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in result["runs"]:
        groups[p.label] += store.samples(p.run_id)
    rows = table_rows(groups)
    baseline = next((r["baseline"] for r in rows if r["baseline"]), "tvm-naive")
    title = f"Experiment {cfg.name}: split {cfg.split}, budget per attempt {cfg.budget or 'unlimited'}"
    note = (f"Fast@p vs {baseline}: correct and faster than p beyond the sample's measurement noise "
            f"(leka.bench.metrics.is_fast; docs/metrics.md). One row per method, backend (target) and level; "
            f"'spent' sums what the final samples' attempts charged. Tasks: {cfg.limit or 'all'} of the split "
            f"(prefix of its round-robin order), {cfg.samples} sample(s) each, {cfg.trials} correctness trials.")
    runs = [[p.label, p.method, json.dumps(p.options, sort_keys=True), p.run_id] for p in result["runs"]]
    main_runs = [p for p in result["runs"] if p.stage == "main"]
    first = model_line(main_runs)
    arms = [arm_row(label, recs) for label, recs in groups.items()]
    arm_note = ("Per arm, all targets and levels: Correct@k counts kernels the arm made (no_candidate is not "
                "correct); Fast@1.0 beyond noise; geomean over tasks of what the user keeps (the kernel if "
                "correct, else the baseline at 1.0x) with a bootstrap 95 % interval over tasks; calls, tokens "
                "and wall minutes summed over the attempts; picks by the menu position they were shown at.")
    md = [first, "", f"# {title}", "", note, "", "## Arms", "", arm_note, "",
          markdown_table(ARM_HEAD, [arm_cells(r) for r in arms]), "", "## By backend and level", "",
          markdown_table(HEAD, [_cells(r) for r in rows]), "",
          *_tuning_md(result.get("tuning")), "## Runs (leka bench report RUN for each)", "",
          markdown_table(["method", "name", "options", "run"], runs), ""]
    paths = {"md": out / "table.md", "html": out / "report.html", "json": out / "results.json"}
    paths["md"].write_text("\n".join(md))
    css = "body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;" \
          "padding:3px 6px;font-size:12px}th{background:#eee}"
    tuning_html = _tuning_html(result.get("tuning"))
    paths["html"].write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{css}</style>"
        f"</head><body><p><b>{html.escape(first)}</b></p><h1>{html.escape(title)}</h1><p>{html.escape(note)}</p>"
        + f"<h2>Arms</h2><p>{html.escape(arm_note)}</p>" + html_table(ARM_HEAD, [arm_cells(r) for r in arms])
        + (f"<img alt='picks by position' src='data:image/png;base64,{bias}'>" if (bias := positions_plot(arms)) else "")
        + "<h2>By backend and level</h2>" + html_table(HEAD, [_cells(r) for r in rows])
        + f"<h2>Fast@p</h2><img alt='Fast@p' src='data:image/png;base64,{_plot(groups)}'>" + tuning_html
        + "<h2>Runs</h2>" + html_table(["method", "name", "options", "run"], runs) + "</body></html>")
    paths["json"].write_text(json.dumps({"model": first, "config": cfg.to_json(), "arms": arms, "rows": rows,
                                         "tuning": result.get("tuning"),
                                         "runs": [p.__dict__ for p in result["runs"]]}, indent=1, default=str))
    return paths
