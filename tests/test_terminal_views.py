"""Terminal views at 80 columns, through a pseudo-terminal (what a user's terminal gives rich): the live
`leka tune` view keeps the newest steps on screen and shows the elapsed time from the start; tables
never split ids; output to a pipe is plain text."""
from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

MOVES = re.compile(r"\x1b\[[0-9]*[AK]|\r")  # cursor up / erase line / carriage return: a redraw starts
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

LIVE_SCRIPT = r"""
import time
from leka.agent.progress import LiveProgress
view = LiveProgress("LEKA leka-0123456789: l1-some_long_task_name-128x128x64 on host-cpu")
with view:
    time.sleep(1.3)   # nothing has finished yet: the status line must already tick
    for i in range(1, 41):
        cand = {"summary": f"cpu.rule_{i}: split(Y.j, factors=[None, 16]); vectorize(Y.j.1) and more words",
                "compiled": True, "correct": True}
        view.update("schedule", {"steps": [{"step": i, "layer": "schedule", "outcome": "improved",
                     "candidates": [cand], "accepted": 0, "best_after": 1.0 + i / 10, "decision": "retry",
                     "next": "schedule", "budget_spent": {"compiles": i, "measurements": i}}]})
    time.sleep(0.4)
"""


def _run_in_pty(argv: list[str], cols: int = 80, rows: int = 24, timeout: float = 120, env: dict | None = None) -> str:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(os.environ, COLUMNS=str(cols), LINES=str(rows), TERM="xterm-256color", **(env or {}))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=10)
    os.close(master)
    assert proc.returncode == 0, out.decode(errors="replace")[-2000:]
    return out.decode(errors="replace")


def test_live_tune_view_fits_80_columns_and_keeps_the_newest_steps():
    raw = _run_in_pty([sys.executable, "-c", LIVE_SCRIPT])
    text = ANSI.sub("", MOVES.sub("\n", raw))
    lines = text.split("\n")
    assert max(len(ln) for ln in lines) <= 80, max(lines, key=len)
    assert "elapsed 0:00:01" in text  # the clock ran before the first step finished
    final = text[text.rindex("LEKA leka-0123456789"):]  # the last frame drawn
    assert "│   40 │" in final and "│    1 │" not in final  # the newest steps, not the first ones
    assert "40 steps)" in final and "spent comp=40 meas=40" in final


def test_tables_never_split_ids_at_80_columns():
    from io import StringIO

    from rich.console import Console

    from leka.cli.tables import Col, render_rich

    buf = StringIO()
    ids = ["l1-mahalanobis_distance-256x64-with-a-long-suffix", "20261201-020149-tvm-dlight-a812f1"]
    rows = [[i, "done", "1.00x", "a very long description " * 5] for i in ids]
    render_rich("t", [Col("id", "id"), Col("status", "id"), Col("speedup", "num"), Col("description", "desc")],
                rows, Console(file=buf, width=80))
    out = buf.getvalue()
    assert all(i in out for i in ids) and max(len(ln) for ln in out.splitlines()) <= 80
    assert "…" in out  # the description was cut instead


def test_output_to_a_pipe_is_plain(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "leka")
    p = subprocess.run([exe, "bench", "list", "--limit", "2"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "┃" not in p.stdout and p.stdout.splitlines()[1].startswith("id ")
    t = subprocess.run([exe, "bench", "list", "--limit", "2", "--tsv"], capture_output=True, text=True, timeout=120)
    assert t.stdout.splitlines()[0].split("\t")[:3] == ["id", "L", "domain"]


def test_live_view_says_what_is_being_evaluated():
    from io import StringIO

    from rich.console import Console

    from leka.agent.progress import LiveProgress

    view = LiveProgress("t", Console(file=StringIO(), width=80))
    view.journal("step3:proposals", [{"meta": {"rule": "cpu.tile"}}, {"meta": {"rule": "cpu.vectorize"}}])
    assert view._status().startswith("step 3: evaluating 2 proposal(s): cpu.tile, cpu.vectorize · elapsed 0:00:0")
    view.journal("step3:eval0", {"correct": True, "speedup": 2.5})
    assert view._status().startswith("step 3: evaluated 1/2 (2.50x)")
    view.journal("step3:eval1", {"correct": False, "failure": "wrong"})
    assert view._status().startswith("step 3: evaluated 2/2 (wrong)")
    view.journal("final:eval", {"correct": True, "speedup": 0.0})
    assert view._status().startswith("finalize: re-measured in a fresh worker (—)")


# --- every view fits 80 columns (issue 24) ---------------------------------------------------------------

def _cli(args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "leka.cli.main", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def _fits(text: str, cols: int = 80) -> None:
    assert max(len(ln) for ln in text.splitlines()) <= cols, max(text.splitlines(), key=len)


def test_shorten_middle_keeps_both_ends():
    from leka.cli.tables import shorten_middle

    assert shorten_middle("fused_matmul_add_relu", 19) == "fused_mat…_add_relu"
    assert shorten_middle("short", 19) == "short" and len(shorten_middle("x" * 50, 10)) == 10


def test_targets_are_narrow_unless_wide():
    narrow = _cli(["targets"])
    assert narrow.returncode == 0 and "host-cpu" in narrow.stdout and "{\"kind\"" not in narrow.stdout
    _fits(narrow.stdout)
    wide = _cli(["targets", "--wide"])
    assert "{\"kind\"" in wide.stdout and max(len(ln) for ln in wide.stdout.splitlines()) > 80


SOURCE = ("# from tvm.script import tirx as T; @T.prim_func; def main(A: T.Buffer((256, 256), 'float32'), "
          "Y: T.Buffer((256, 256), 'float32')):; for i, j in T.grid(256, 256):; with T.block('Y'):; "
          "vi, vj = T.axis.remap('SS', [i, j]); Y[vi, vj] = A[vi, vj] * T.float32(2)") * 3


def _long_trace(home) -> None:
    from leka.agent.trace import TraceStore

    store = TraceStore()
    store.create_run("t-long", "l1-a_rather_long_task_name_of_the_suite-256x256x256", "host-cpu", "scripted", {})
    steps = [{"step": 1, "layer": "algorithm", "outcome": "improved", "accepted": 0, "best_before": 1.0,
              "best_after": 1.4, "decision": "advance", "next": "schedule",
              "candidates": [{"summary": SOURCE, "speedup": 1.4, "correct": True}]},
             {"step": 2, "layer": "schedule", "outcome": "improved", "accepted": 0, "best_before": 1.4,
              "best_after": 5.6, "decision": "advance", "next": "finalize",
              "candidates": [{"summary": "cpu.tile_vectorize_parallel: split(Y.j, factors=[None, 16]); "
                                         "vectorize(Y.j.1); parallel(Y.i); unroll(Y.j.0)", "speedup": 5.6,
                              "correct": True}]}]
    store.put_steps("t-long", steps)
    store.set_status("t-long", "done", {"correct": True, "speedup": 5.5, "baseline": "tvm-naive",
                                        "candidate_ms": 0.1, "baseline_ms": 0.55, "search_speedup": 5.6})
    store.close()


def test_trace_summarises_each_decision_in_one_short_line(tmp_path):
    env = {"LEKA_HOME": str(tmp_path / "home")}
    _run_with_home(env, _long_trace, tmp_path)
    plain = _cli(["trace", "t-long", "--plain"], env)
    assert plain.returncode == 0, plain.stderr
    _fits(plain.stdout)
    assert "new kernel source (" in plain.stdout and "T.Buffer" not in plain.stdout
    assert "cpu.tile_vectorize_parallel: …" in plain.stdout  # rule kept, the rest cut at 30 characters
    steps = _cli(["trace", "t-long", "--steps", "--plain"], env)
    _fits(steps.stdout)
    steps = _cli(["trace", "t-long", "--steps", "--wide"], env)
    assert "T.Buffer((256, 256)" in steps.stdout  # the whole source stays behind --steps --wide
    exe = [sys.executable, "-m", "leka.cli.main", "trace", "t-long"]
    text = ANSI.sub("", MOVES.sub("\n", _run_in_pty(exe, env=env)))
    _fits(text)
    assert "new kernel source" in text


def _run_with_home(env: dict, fn, *args) -> None:
    old = os.environ.get("LEKA_HOME")
    os.environ.update(env)
    try:
        fn(*args)
    finally:
        if old is None:
            os.environ.pop("LEKA_HOME", None)
        else:
            os.environ["LEKA_HOME"] = old


def test_live_optimize_table_cuts_kernel_names_from_the_middle():
    from io import StringIO
    from types import SimpleNamespace

    from rich.console import Console

    from leka.optimize.view import OptimizeView

    view = OptimizeView(quiet=True)
    view.console = Console(file=StringIO(), width=80)
    names = [f"fused_conv2d_add_clip_multiply_add_{i}" for i in range(3)] + ["fused_matmul_add_relu"]
    view.kernels([SimpleNamespace(spec=SimpleNamespace(key=n, name=n, weight=2), share=0.3, default_ms=0.1234,
                                  budget="minutes=1.5", quick=False, why_not=None) for n in names])
    view.set(names[0], "tuning")
    view.console.print(view.frame())
    out = view.console.file.getvalue()
    _fits(out)
    rows = [ln for ln in out.splitlines() if "fused_" in ln]
    assert len(rows) == 4 and all("…" in ln for ln in rows[:3])
    assert all(f"_{i} " in rows[i] for i in range(3))  # the ends that tell the kernels apart survive


def test_remote_status_is_a_short_table_and_json_on_request(tmp_path):
    from leka.remote.pending import PendingStore

    store = PendingStore(tmp_path / "p.sqlite")
    big = {"tune": {"task_id": "l1-conv2d_3x3_s1_nhwc-32x32x16x16", "target": "cuda",
                    "policy": {f"knob_{i}": i for i in range(60)}}}
    for i in range(3):
        store.set_run(f"leka-20261205-0101{i:02d}-abcdef", big, "pending")
    store._db.close()
    text = _cli(["remote", "--store", str(tmp_path / "p.sqlite"), "status"])
    assert text.returncode == 0, text.stderr
    # plain: a title, the column header, a line per run, the open count and the store path
    assert len(text.stdout.splitlines()) == 2 + 3 + 2 and "knob_" not in text.stdout
    shown = ANSI.sub("", _run_in_pty([sys.executable, "-m", "leka.cli.main", "remote", "--store",
                                      str(tmp_path / "p.sqlite"), "status"]))
    table = shown[:shown.index("open measurement")]
    _fits(table)  # the table fits a terminal; the last line names the store (rich wraps it there)
    assert "abcdef" in table and "pending" in table
    said = json.loads(_cli(["remote", "--store", str(tmp_path / "p.sqlite"), "status", "--json"]).stdout)
    assert len(said["runs"]) == 3 and said["runs"][0]["options"]["tune"]["policy"]["knob_59"] == 59


# --- piped tables fit 80 columns too (issue 24 item 4) ----------------------------------------------------

LONG_IDS = ["l2-mbv2_inverted_residual_s1_nhwc-28x28x32x192x32-f16",
            "l1-normalize_imagenet_hwc_u8_to_chw_f32-224x224-u8",
            "l1-warp_affine_bilinear_u8_to_f32-480x640x112x112-u8-with-a-user-suffix"]


def _three_runs(db) -> list[str]:
    from leka.bench.store import ResultStore

    runs = []
    with ResultStore(db) as store:
        for k, method in enumerate(["tvm-naive", "leka", "tvm-dlight"]):
            run = store.create_run(method, "host-cpu", {})
            for i, task in enumerate(LONG_IDS):
                ok = (i + k) % 3 != 1
                store.add_sample(run, {"task": task, "target": "host-cpu", "method": method, "sample_idx": 0,
                                       "compiled": True, "correct": ok, "failure": None if ok else "wrong",
                                       "speedup": 1.0 + i + k if ok and i else None,
                                       "baseline": "tvm-naive" if ok and i else None, "compile_s": 12.5})
            runs.append(run)
    return runs


def test_piped_bench_tables_fit_80_columns_unless_wide(tmp_path, capsys):
    from leka.cli.main import main

    db = tmp_path / "results.sqlite"
    runs = _three_runs(db)
    for argv in (["bench", "list", "--level", "1"], ["bench", "runs", "--store", str(db)],
                 ["bench", "compare", *runs, "--store", str(db)]):
        assert main(argv) == 0
        out = capsys.readouterr().out  # captured: not a terminal, so the plain table
        _fits(out)  # the run legend too: a table of its own
    assert re.search(r"l1-warp_affine\S*…\S*user-suffix ", out)  # cut from the middle: both ends kept
    assert main(["bench", "compare", *runs, "--store", str(db), "--wide"]) == 0
    wide = capsys.readouterr().out
    assert LONG_IDS[2] in wide and max(len(ln) for ln in wide.splitlines()) > 80
    assert main(["bench", "list", "--level", "1", "--tsv"]) == 0  # scripts get every column whole
    assert max(len(ln) for ln in capsys.readouterr().out.splitlines()) > 80


def test_piped_remote_status_fits_80_columns(tmp_path, capsys):
    from leka.cli.main import main
    from leka.remote.pending import PendingStore

    store = PendingStore(tmp_path / "p.sqlite")
    for i, task in enumerate(LONG_IDS):
        store.set_run(f"leka-20261205-0101{i:02d}-abcdef", {"tune": {"task_id": task, "target": "cuda"}}, "pending")
    store._db.close()
    assert main(["remote", "--store", str(tmp_path / "p.sqlite"), "status"]) == 0
    out = capsys.readouterr().out
    _fits(out[:out.index("open measurement")])
    assert re.search(r"l1-warp_affine\S*…\S*user-suffix ", out)
