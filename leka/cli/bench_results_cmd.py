"""`leka bench runs|report|compare|export`: reading a results store (runs, reports, comparisons, exports)."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def cmd_runs(args) -> int:
    from leka.bench.store import ResultStore

    store = ResultStore(args.store)
    rows = []
    for r in store.list_runs():
        run = store.get_run(r["run_id"])
        rows.append({"run_id": r["run_id"], "method": r["method"], "target": r["target"], "status": run["status"],
                     "samples": len(store.finished_keys(r["run_id"]))})
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    from .tables import Col, output_mode, render

    cols = [Col("run_id", "id"), Col("status", "id"), Col("samples", "num"), Col("method", "id"),
            Col("target", "desc", optional=True)]
    render(f"runs in {store.path}", cols, [[r[c.name] for c in cols] for r in rows], output_mode(args))
    return 0


def cmd_report(args) -> int:
    from leka.bench.report import write_comparison, write_report
    from leka.bench.store import ResultStore

    store = ResultStore(args.store)
    runs = [store.get_run(r)["run_id"] for r in args.run]
    if len(runs) > 1:
        out = Path(args.out) if args.out else store.path.parent / "reports" / ("compare-" + "-vs-".join(runs))
        md, html = write_comparison(store, runs, out)
    else:
        out = Path(args.out) if args.out else store.path.parent / "reports" / runs[0]
        md, html = write_report(store, runs[0], out)
    if not args.json:
        print(f"wrote {md} and {html}")
        return 0
    from leka.bench import metrics

    from .grammar import print_json

    print_json({"runs": runs, "md": str(md), "html": str(html),
                "summary": {r: metrics.summarize(store.samples(r)).to_json() for r in runs}})
    return 0


def cmd_compare(args) -> int:
    from leka.bench.report import build_comparison
    from leka.bench.store import ResultStore
    from leka.errors import LekaError

    from .tables import Col, output_mode, render

    if len(args.run) < 2:
        raise LekaError("compare needs two or more runs (one run: `leka bench report RUN`)")
    data = build_comparison(ResultStore(args.store), args.run)
    if args.json:
        from .grammar import print_json

        print_json(data)
        return 0
    mode = output_mode(args)
    letters = [chr(ord("A") + i) for i in range(len(data["runs"]))]
    short = ["tasks", "n", "Correct@1", "Fast@1", "Fast@2", "geomean", "compile s"]  # COMPARE_SUMMARY_HEAD[3:]
    render("summary", [Col("", "id")] + [Col(h, "num") for h in short],
           [[letter] + row[3:] for letter, row in zip(letters, data["summary"])], mode)
    cols = [Col("task", "name")] + [Col(letter, "id") for letter in letters]
    if len(letters) > 1:
        cols.append(Col(f"{letters[-1]}/A", "num"))
    render("speedup per task (median of correct samples vs each run's baseline)", cols, data["task_rows"], mode)
    render("runs", [Col("", "id"), Col("run", "id"), Col("method", "name", optional=True),
                    Col("target", "name", optional=True)],
           [[letter, *row[:3]] for letter, row in zip(letters, data["summary"])], mode)
    return 0


def cmd_export(args) -> int:
    from leka.bench.store import ResultStore

    from .grammar import print_json

    store = ResultStore(args.store)
    if args.scripts:
        written = _export_scripts(store, args.run, Path(args.scripts))
        if args.json:
            print_json({"run_id": store.get_run(args.run)["run_id"], "scripts": args.scripts, "written": written})
        return 0
    if args.json and not args.out:
        print_json(store.samples(store.get_run(args.run)["run_id"]))
        return 0
    text = store.export(args.run, args.format)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
        if args.json:
            run_id = store.get_run(args.run)["run_id"]
            print_json({"run_id": run_id, "out": args.out, "format": args.format,
                        "samples": len(store.samples(run_id))})
    else:
        sys.stdout.write(text)
    return 0


def _export_scripts(store, run_ref: str, out: Path) -> int:  # the number of files written
    """Every stored sample source as a candidate file; baselines keep none (they are re-derivable)."""
    from leka.errors import LekaError
    from leka.kernel_export import safe_name, write_kernel

    run = store.get_run(run_ref)
    spec = run["config"].get("target_spec") or run["target"]
    written, without = 0, 0
    for r in store.samples(run["run_id"]):
        if not r.get("source"):
            without += 1
            continue
        note = (f"{run['method']} run {run['run_id']} sample {r.get('sample_idx')}: correct={r.get('correct')}, "
                f"speedup {r['speedup']:.2f}x vs {r.get('baseline')}" if isinstance(r.get("speedup"), (int, float))
                else f"{run['method']} run {run['run_id']} sample {r.get('sample_idx')}: correct={r.get('correct')}")
        write_kernel(out / safe_name(f"{r['task']}.{r.get('sample_idx', 0)}.py"), r["source"], r["task"], spec, note)
        written += 1
    if not written:
        raise LekaError(f"run {run['run_id']} ({run['method']}) stored no kernel sources: "
                        + ("baseline methods keep none (re-derive them with `leka bench run`)"
                           if run["method"] in ("tvm-naive", "tvm-dlight", "onnxruntime") else "nothing to write"))
    print(f"wrote {written} kernel file(s) to {out}" + (f"; {without} sample(s) without a source" if without else ""),
          file=sys.stderr)
    return written
