"""Run reports: Markdown plus one self-contained HTML page (plots embedded as base64 PNG, matplotlib Agg):
speedup distribution, Fast@p curve, roofline chart, and metric tables per level, domain and target."""
from __future__ import annotations

import base64
import html
import io
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from leka.cli.tables import MISSING, fmt_cell, html_table, markdown_table

from . import metrics
from .store import ResultStore

FAST_CURVE_P = [i / 20 for i in range(0, 61)]  # 0 .. 3.0


def summary_rows(records: list[dict[str, Any]], key: str) -> list[list[str]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[str(r.get(key))].append(r)
    rows = []
    for name in sorted(groups):
        s = metrics.summarize(groups[name])
        rows.append([name, str(s.tasks), str(s.samples), fmt_cell(s.compile_rate, True), fmt_cell(s.correct_at_1, True),
                     fmt_cell(s.fast_at["Fast@1.0"], True), fmt_cell(s.fast_at["Fast@2.0"], True),
                     fmt_cell(s.geomean_speedup), fmt_cell(s.roofline_median, True)])
    return rows


SUMMARY_HEAD = ["group", "tasks", "samples", "compiled", "Correct@1", "Fast@1.0", "Fast@2.0", "geomean speedup",
                "median roofline"]


def _plots(records: list[dict[str, Any]], facts: dict[str, Any], baseline: str) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, str] = {}
    correct = [r for r in records if metrics.is_correct(r) and r.get("speedup")]

    def png(fig) -> str:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
        plt.close(fig)
        return base64.b64encode(buf.getvalue()).decode()

    fig, ax = plt.subplots(figsize=(6, 3.2))
    if correct:
        logs = [math.log2(r["speedup"]) for r in correct]
        ax.hist(logs, bins=min(30, max(5, len(logs) // 2)), color="#4472c4")
        ax.axvline(0, color="k", lw=1)
    ax.set_xlabel(f"log2 speedup vs {baseline} (correct samples)")
    ax.set_ylabel("samples")
    ax.set_title(f"Speedup distribution ({len(correct)} correct samples)")
    out["speedup"] = png(fig)

    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(FAST_CURVE_P, [metrics.fast_at_p(records, p) or 0.0 for p in FAST_CURVE_P], color="#c00000")
    ax.set_xlabel(f"p (speedup threshold vs {baseline})")
    ax.set_ylabel("Fast@p")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title("Fast@p: share of tasks whose sample is correct and > p times faster beyond noise")
    out["fastp"] = png(fig)

    peak, bw = facts.get("peak_fp32_gflops"), facts.get("mem_bw_gbs")
    pts = [(r["flops"] / r["bytes"], r["flops"] / (r["candidate_ms"] * 1e-3) / 1e9) for r in records
           if metrics.is_correct(r) and r.get("candidate_ms") and r.get("flops") and r.get("bytes")]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    if pts:
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, color="#2e7d32", label="samples")
    if peak and bw:
        lo = min([p[0] for p in pts] + [0.05]) / 2
        hi = max([p[0] for p in pts] + [2 * peak / bw]) * 2
        xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
        ax.plot(xs, [min(peak, x * bw) for x in xs], color="k", lw=1.2,
                label=f"roof: {peak:g} GFLOP/s, {bw:g} GB/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / compulsory byte)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title("Roofline" + ("" if peak and bw else " (target facts lack peak or bandwidth)"))
    if pts or (peak and bw):
        ax.legend(fontsize=8)
    out["roofline"] = png(fig)
    return out


def build_report(store: ResultStore, run_id: str) -> dict[str, Any]:
    """Everything a report shows, as data (also used by tests)."""
    run = store.get_run(run_id)
    recs = store.samples(run["run_id"])
    s = metrics.summarize(recs, ks=(1, 2, 5, 10))
    sections = {key: summary_rows(recs, key) for key in ("level", "domain", "target")}
    task_rows = []
    for r in recs:
        task_rows.append([r["task"], str(r.get("sample_idx")), "yes" if r.get("compiled") else "no",
                          "yes" if metrics.is_correct(r) else (r.get("failure") or "no"), fmt_cell(r.get("speedup")),
                          fmt_cell(r.get("candidate_ms")), fmt_cell(r.get("baseline_ms")), fmt_cell(r.get("compile_s")),
                          fmt_cell(r.get("roofline_fraction"), True), str((r.get("meta") or {}).get("schedule", "")),
                          (r.get("error") or "")[:160]])
    from leka.executors.progress import where_summary

    where = [[ex, node, str(n), str(bad)] for ex, node, n, bad in where_summary(recs)]
    return {"run": run, "records": recs, "summary": s, "sections": sections, "task_rows": task_rows,
            "where": where}


WHERE_HEAD = ["executor", "node", "samples", "failed"]


TASK_HEAD = ["task", "#", "compiled", "correct", "speedup", "ms", "baseline ms", "compile s", "roofline", "schedule",
             "error"]


def median_compile_s(records: list[dict[str, Any]]) -> float | None:
    """Median build time (TVMScript parse + TVM build) over the samples that compiled."""
    times = sorted(r["compile_s"] for r in records
                   if r.get("compiled") and isinstance(r.get("compile_s"), (int, float)))
    return times[len(times) // 2] if times else None


def write_report(store: ResultStore, run_id: str, out_dir: str | Path) -> tuple[Path, Path]:
    data = build_report(store, run_id)
    run, s, recs = data["run"], data["summary"], data["records"]
    facts = (run["config"].get("target") or {}).get("facts") or {}
    baseline = s.baseline or "tvm-naive"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = _plots(recs, facts, baseline)
    title = f"EdgeKernelBench run {run['run_id']}"
    headline = [["method", run["method"]], ["target", run["target"]], ["status", run["status"]],
                ["tasks / samples", f"{s.tasks} / {s.samples}"], ["compile rate", fmt_cell(s.compile_rate, True)],
                ["Correct@1", fmt_cell(s.correct_at_1, True)]]
    headline += [[k, fmt_cell(v, True)] for k, v in s.correct_at_k.items() if k != "Correct@1"]
    headline += [[f"{k} vs {baseline}", fmt_cell(v, True)] for k, v in s.fast_at.items()]
    headline += [[f"geomean speedup vs {baseline} (correct samples)", fmt_cell(s.geomean_speedup)],
                 ["median roofline fraction (correct samples)", fmt_cell(s.roofline_median, True)],
                 ["median compile time, s (compiled samples)", fmt_cell(median_compile_s(recs))],
                 ["versions", json.dumps(run["versions"], sort_keys=True)],
                 ["selection", json.dumps(run["config"].get("selection", {}), sort_keys=True)],
                 ["samples per task / trials / budget", f"{run['config'].get('samples')} / "
                                                         f"{run['config'].get('trials')} / "
                                                         f"{run['config'].get('budget') or 'unlimited'}"],
                 ["events", ", ".join(e["event"] for e in run["events"])]]
    md = [f"# {title}", "", markdown_table(["metric", "value"], headline), ""]
    for key, rows in data["sections"].items():
        md += [f"## By {key}", "", markdown_table(SUMMARY_HEAD, rows), ""]
    md += ["## Where each sample ran", "", markdown_table(WHERE_HEAD, data["where"]), ""]
    md += ["## Samples", "", markdown_table(TASK_HEAD, data["task_rows"]), "",
           "Plots (speedup distribution, Fast@p curve, roofline) are in report.html.", "",
           "Metric definitions: docs/metrics.md. Failures count as 0."]
    md_path = out / "report.md"
    md_path.write_text("\n".join(md) + "\n")

    css = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;"
           "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}"
           "th{background:#eee}img{max-width:100%;margin:0.5em 0}")
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{css}</style></head><body><h1>{html.escape(title)}</h1>",
             html_table(["metric", "value"], headline)]
    for name, label in (("speedup", "Speedup distribution"), ("fastp", "Fast@p curve"), ("roofline", "Roofline")):
        parts.append(f"<h2>{label}</h2><img alt='{label}' src='data:image/png;base64,{plots[name]}'>")
    for key, rows in data["sections"].items():
        parts.append(f"<h2>By {html.escape(key)}</h2>" + html_table(SUMMARY_HEAD, rows))
    parts.append("<h2>Where each sample ran</h2>" + html_table(WHERE_HEAD, data["where"]))
    parts.append("<h2>Samples</h2>" + html_table(TASK_HEAD, data["task_rows"]))
    parts.append("<p>Metric definitions: docs/metrics.md. Failures count as 0.</p></body></html>")
    html_path = out / "report.html"
    html_path.write_text("".join(parts))
    return md_path, html_path


# --- side by side: several runs ------------------------------------------------------------------
COMPARE_SUMMARY_HEAD = ["run", "method", "target", "tasks", "samples", "Correct@1", "Fast@1.0", "Fast@2.0",
                        "geomean speedup", "median compile s"]


def _task_cell(recs: list[dict[str, Any]]) -> tuple[str, float | None]:
    """One run's result on one task: the median speedup of its correct samples (k/n when n > 1), or the
    first failure; the number is for the ratio column."""
    if not recs:
        return MISSING, None
    ok = sorted(r["speedup"] for r in recs if metrics.is_correct(r) and isinstance(r.get("speedup"), (int, float)))
    n_ok = sum(1 for r in recs if metrics.is_correct(r))
    count = f" ({n_ok}/{len(recs)})" if len(recs) > 1 else ""
    if ok:
        med = ok[len(ok) // 2]
        return f"{med:.2f}x{count}", med
    if n_ok:
        return f"correct, not timed{count}", None
    return (recs[0].get("failure") or "wrong") + count, None


def build_comparison(store: ResultStore, run_refs: list[str]) -> dict[str, Any]:
    """Runs side by side, as data: a summary row per run and a row per task (union of the runs' tasks,
    in first-run order), with the ratio of the last run to the first when both timed the task."""
    runs = [store.get_run(r) for r in run_refs]
    ids = [r["run_id"] for r in runs]
    if len(set(ids)) != len(ids):
        from leka.errors import LekaError

        raise LekaError(f"the same run is named twice: {', '.join(ids)}")
    recs = {rid: store.samples(rid) for rid in ids}
    summary = []
    for run in runs:
        rs = recs[run["run_id"]]
        s = metrics.summarize(rs)
        summary.append([run["run_id"], run["method"], run["target"], str(s.tasks), str(s.samples),
                        fmt_cell(s.correct_at_1, True), fmt_cell(s.fast_at["Fast@1.0"], True),
                        fmt_cell(s.fast_at["Fast@2.0"], True),
                        f"{s.geomean_speedup:.2f}x" if s.geomean_speedup is not None else MISSING,
                        fmt_cell(median_compile_s(rs))])
    tasks: list[str] = []
    for rid in ids:
        tasks += [t for t in dict.fromkeys(r["task"] for r in recs[rid]) if t not in tasks]
    head = ["task"] + [f"{run['method']} ({run['run_id']})" for run in runs]
    if len(ids) > 1:
        head.append("last / first")
    rows = []
    for task in tasks:
        cells = [_task_cell([r for r in recs[rid] if r["task"] == task]) for rid in ids]
        row = [task] + [c[0] for c in cells]
        if len(ids) > 1:
            a, b = cells[0][1], cells[-1][1]
            row.append(f"{b / a:.2f}x" if a and b else MISSING)
        rows.append(row)
    return {"runs": runs, "summary": summary, "task_head": head, "task_rows": rows}


def write_comparison(store: ResultStore, run_refs: list[str], out_dir: str | Path) -> tuple[Path, Path]:
    data = build_comparison(store, run_refs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    title = "EdgeKernelBench comparison: " + " vs ".join(r["run_id"] for r in data["runs"])
    note = ("Per task: the median speedup of the correct samples vs each run's baseline (k/n correct when a run "
            f"has several samples), or the failure; {MISSING} = no sample or no timing. Metric definitions: "
            "docs/metrics.md. Failures count as 0.")
    md = [f"# {title}", "", "## Summary", "", markdown_table(COMPARE_SUMMARY_HEAD, data["summary"]), "",
          "## Per task", "", markdown_table(data["task_head"], data["task_rows"]), "", note]
    md_path = out / "compare.md"
    md_path.write_text("\n".join(md) + "\n")
    css = ("body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
           "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}th{background:#eee}")
    html_path = out / "compare.html"
    html_path.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{css}</style>"
        f"</head><body><h1>{html.escape(title)}</h1><h2>Summary</h2>"
        + html_table(COMPARE_SUMMARY_HEAD, data["summary"]) + "<h2>Per task</h2>"
        + html_table(data["task_head"], data["task_rows"]) + f"<p>{html.escape(note)}</p></body></html>")
    return md_path, html_path
