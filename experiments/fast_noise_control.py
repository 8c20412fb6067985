"""The naive-vs-itself control for Fast@p: a `tvm-naive` run times the naive lowering against itself, so every
sample's true speedup is 1.0 and any "fast" sample is measurement noise. Prints, per stored run, Fast@1.0
under a strict `speedup > 1.0` next to Fast@1.0 beyond noise (leka.bench.metrics.is_fast), and the share of
samples whose noise bound exceeds 1.0 at each p.

Make a control run first, e.g.
    leka bench run --method tvm-naive --level 1 --limit 40 --store /tmp/control.sqlite --quiet
then: python experiments/fast_noise_control.py /tmp/control.sqlite [more stores ...]
Goal (issue 10): ~0-5 % Fast@1.0 under the rule for the control (a strict > 1.0 gives ~57 %).
"""
from __future__ import annotations

import argparse
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stores", nargs="+", help="SQLite result stores holding tvm-naive runs")
    args = ap.parse_args()

    from leka.bench import metrics
    from leka.bench.store import ResultStore

    print(f"{'run':<40}{'level':>6}{'samples':>9}{'strict >1.0':>13}{'beyond noise':>14}{'geomean':>9}")
    for path in args.stores:
        with ResultStore(path) as store:
            for run in store.list_runs():
                if run["method"] != "tvm-naive":
                    continue
                recs = store.samples(run["run_id"])
                timed = [r for r in recs if metrics.is_correct(r) and r.get("speedup")]
                if not timed:
                    continue
                strict = sum(1 for r in timed if r["speedup"] > 1.0) / len(timed)
                levels = ",".join(sorted({str(r.get("level")) for r in timed}))
                print(f"{run['run_id']:<40}{levels:>6}{len(timed):>9}{strict:>13.1%}"
                      f"{metrics.fast_at_p(timed, 1.0):>14.1%}{metrics.geomean_speedup(timed):>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
