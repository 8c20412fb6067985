"""Golden decisions of every CPU schedule rule, as MetaSchedule's rule tests compare traces: the schedule and
memory steps (primitive, block, loops, factors) each rule emits on one small workload, compared structurally with
tests/data/cpu_rule_golden.json. "Compiles and is correct" does not notice a rule that stopped vectorising; this
does. A deliberate change of a rule regenerates its entry: LEKA_REGEN_GOLDEN=1 pytest tests/test_cpu_rule_golden.py
(then review the diff of the JSON file like code).

Targets are fixed presets (rpi5; a Cascade Lake dict for the VNNI and the 16-lane rules), never the host, so the figures a rule
reads (cores, vector width) are the same on every machine."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from leka.ir import CandidateIR
from leka.proposers.offline.context import RuleContext
from leka.proposers.offline.rules import CPU_RULES
from leka.targets import get_target
from leka.tasks import get_task

GOLDEN = Path(__file__).parent / "data" / "cpu_rule_golden.json"
VNNI_CPU = {"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "cascadelake", "num-cores": 4}
# rule -> the smallest L1/L2 workload it takes (by flops + bytes), found by trying the suite in that order
CASES = {
    "cpu_int8_dot": "l1-conv2d_1x1_nhwc_i8acc-6x6x128x128-i8",
    "cpu_multi_gemm": "l2-ae_bottleneck_enc_dec-1x128x8",
    "cpu_pointwise_conv": "l1-conv2d_1x1_s1_nchw-6x6x128x128",
    "cpu_pointwise_dot": "l1-conv2d_1x1_s1_nchw-3x3x256x256",
    "cpu_conv_im2col": "l1-conv2d_3x3_dil6_nchw-17x17x64x32",
    "cpu_conv_channel_pack": "l1-conv2d_5x5_s1_nchw-14x14x6x16",
    "cpu_conv_register_tile": "l1-conv2d_5x5_s1_nchw-32x32x1x6",
    "cpu_depthwise_conv": "l1-dwconv2d_3x3_s2_nhwc_i8acc-12x12x64x64-i8",
    "cpu_matmul_epilogue": "l2-linear_bias_gelu-32x128x512",
    "cpu_tile_reduction": "l1-dense_i8acc-64x12-i8",
    "cpu_pack_transposed": "l2-pca_reconstruction_error-1024x32x4",
    "cpu_partition_borders": "l1-causal_dwconv1d_k3-32x64-i8",
    "cpu_rfactor_dot": "l2-vae_reparam_kl-64x8",
    "cpu_row_fusion": "l1-dense_i8acc-64x12-i8",
    "cpu_short_reduction": "l2-kalman_scalar_update-15",
    "cpu_parallel_vectorize": "l1-hardsigmoid-1x1x96",
    "cpu_scan_unroll": "l1-pcen-40x49",
}
# rules whose workload needs x86: VNNI, or 16-lane vectors (on NEON's 4 lanes a 3-wide row is a full enough vector)
X86_RULES = ("cpu_int8_dot", "cpu_pointwise_dot")
RULES = {r.__name__.rsplit(".", 1)[-1]: r for r in CPU_RULES}


def emitted(rule: str) -> list[dict[str, Any]]:
    """The decisions `rule` emits on its workload: per candidate, its knobs and its schedule/memory steps."""
    task = get_task(CASES[rule])
    target = get_target(VNNI_CPU if rule in X86_RULES else "rpi5")
    irs = RULES[rule].apply(RuleContext.build(task, CandidateIR.initial(task), target, [])) or []
    out = []
    for ir in irs:
        d = ir.to_json()
        out.append({"knobs": d["notes"].get("knobs"), "schedule": d["schedule"], "memory": d["memory"]})
    return json.loads(json.dumps(out, sort_keys=True, default=str))  # tuples as lists, as the file holds them


def _dump(golden: dict[str, Any]) -> str:
    """One line per step, so a changed decision reads as a one-line diff."""
    one = lambda x: json.dumps(x, sort_keys=True)  # noqa: E731
    rules = []
    for rule, cands in sorted(golden.items()):
        body = [f'  {{"knobs": {one(c["knobs"])},\n' + ",\n".join(
            f'   "{layer}": [' + "".join(f"\n    {one(s)}" + ("," if i < len(c[layer]) - 1 else "")
                                      for i, s in enumerate(c[layer])) + "]" for layer in ("schedule", "memory")) + "}"
                for c in cands]
        rules.append(f' "{rule}": [\n' + ",\n".join(body) + "]")
    return "{\n" + ",\n".join(rules) + "\n}\n"


def test_every_cpu_rule_has_a_case():
    assert set(CASES) == set(RULES)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_emits_its_golden_decisions(rule):
    got = emitted(rule)
    assert got, f"{rule} no longer takes {CASES[rule]}"
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if os.environ.get("LEKA_REGEN_GOLDEN"):
        golden[rule] = got
        GOLDEN.write_text(_dump(golden))
        pytest.skip("golden decisions regenerated")
    want = golden.get(rule)
    assert want is not None, f"no golden decisions for {rule}: LEKA_REGEN_GOLDEN=1 writes them"
    assert len(got) == len(want), f"{rule}: {len(got)} candidates, golden {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g["knobs"] == w["knobs"], f"{rule} candidate {i}: knobs changed"
        for layer in ("schedule", "memory"):
            ops = [s["op"] if isinstance(s, dict) else s for s in g[layer]]
            want_ops = [s["op"] if isinstance(s, dict) else s for s in w[layer]]
            assert ops == want_ops, f"{rule} candidate {i}: {layer} primitives changed"
            assert g[layer] == w[layer], f"{rule} candidate {i}: {layer} arguments changed"
