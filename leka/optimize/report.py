"""report.md and report.html of an artifact: the per-kernel table and the end-to-end latency comparison."""
from __future__ import annotations

import html
from typing import Any

from leka.cli.tables import html_table, markdown_table


def _x(v: Any) -> str:
    return f"{v:.2f}x" if isinstance(v, (int, float)) else "-"


def _ms(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, (int, float)) else "-"


def kernel_rows(manifest: dict[str, Any]) -> list[list[str]]:
    return [[k["name"], str(k["weight"]), f"{100 * k['share']:.1f} %", _ms(k.get("default_ms")), _decision(k),
             _x(k.get("speedup")), k.get("method") or "-", k.get("agent_run") or "-"]
            for k in manifest["kernels"]]


def _decision(k: dict[str, Any]) -> str:
    """The decision, with why a measured gain was not taken (below the noise floor) or what failed."""
    d = k.get("detail") or {}
    if k.get("speedup") is not None or not k["decision"].endswith("default kept"):
        return k["decision"]
    if d.get("measured_speedup") is not None:
        return f"{k['decision']} (measured {d['measured_speedup']:.2f}x, floor {d.get('noise_floor', 1.05):.2f}x)"
    if d.get("failure") or d.get("error"):
        return f"{k['decision']} ({d.get('failure') or 'error'}: {str(d.get('error') or '')[:60]})"
    return k["decision"]


KERNEL_HEAD = ["kernel", "calls", "share", "default ms", "decision", "speedup", "method", "agent run"]
LATENCY_HEAD = ["build", "median ms", "min ms", "rounds", "spread across rounds", "optimized vs this build"]


def latency_rows(manifest: dict[str, Any]) -> list[list[str]]:
    from .timing_verdict import spread, verdict

    lat = manifest.get("latency") or {}
    opt = lat.get("optimized")
    rows = []
    for name in ("optimized", "tvm-naive", "tvm-dlight", "onnxruntime"):
        r = lat.get(name)
        if r:
            versus = verdict(opt, r) if opt and name != "optimized" else "-"
            rows.append([name, _ms(r["median_ms"]), _ms(r["min_ms"]), str(r["rounds"]), f"{spread(r):.1%}", versus])
    return rows


def summary_lines(manifest: dict[str, Any]) -> list[str]:
    m = manifest
    lines = [f"model {m['model']['path']} (sha256 {m['model']['sha256'][:12]}, opset {m['model']['opset']}) "
             f"for {m['target']['name']}; method {m['method']}; run {m['run_id']}",
             f"budget {m['budget']['spec'] or 'unlimited'}; spent {m['budget']['spent_summary']}"
             + (f"; {m['budget']['ended']}" if m["budget"].get("ended") else "")]
    v = m.get("verification") or {}
    if v.get("status") == "passed":
        errs = ", ".join(f"{k} {e:.2g}" for k, e in v["max_abs_err"].items())
        lines.append(f"verified against ONNX Runtime on {v['sets']} input sets ({', '.join(v['distributions'])}): "
                     f"max abs error {errs}")
    else:
        lines.append(f"verification: {v.get('status', 'not run')} {v.get('why', '')}".strip())
    if m.get("tuning_note"):
        lines.append(m["tuning_note"])
    from .timing_verdict import warnings

    lines += [f"warning: {w}" for w in warnings(m.get("latency"), m.get("latency_host"))]
    if m.get("latency_cut"):
        lines.append(m["latency_cut"])
    lines += [f"not timed: the {name} build (for comparison only): {why[:200]}"
              for name, why in (m.get("references_failed") or {}).items()]
    lines += [f"dropped {d['kernel']} (default kept): the model's build failed with its winner: {d['why'][:200]}"
              for d in m.get("dropped") or []]
    if m.get("withheld"):
        lines.append(f"default build written: {m['withheld']}")
    return lines


def markdown(manifest: dict[str, Any]) -> str:
    threads = (manifest.get("latency_threads") or "-")
    parts = ["# leka optimize report", "", *[f"- {ln}" for ln in summary_lines(manifest)], "",
             "## Kernels (share of the default build's end-to-end time)", "",
             markdown_table(KERNEL_HEAD, kernel_rows(manifest)), ""]
    if manifest.get("latency"):
        parts += [f"## End-to-end latency (builds interleaved over rounds, {threads} threads each)", "",
                  markdown_table(LATENCY_HEAD, latency_rows(manifest)), ""]
    return "\n".join(parts)


def html_page(manifest: dict[str, Any]) -> str:
    items = "".join(f"<li>{html.escape(ln)}</li>" for ln in summary_lines(manifest))
    body = f"<h1>leka optimize report</h1><ul>{items}</ul><h2>Kernels</h2>{html_table(KERNEL_HEAD, kernel_rows(manifest))}"
    if manifest.get("latency"):
        body += f"<h2>End-to-end latency</h2>{html_table(LATENCY_HEAD, latency_rows(manifest))}"
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#eee}")
    return f"<!doctype html><html><head><meta charset='utf-8'><title>leka optimize</title><style>{style}</style>" \
           f"</head><body>{body}</body></html>"
