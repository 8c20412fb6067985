"""Per-layer prompt tuning on the dev split: coordinate ascent over layers, one layer at a time, in the
order the config lists them. For each variant of the layer (the other layers at their current choice,
the default at first) the method runs on the dev split (a bench run of its own, `exp.NAME.tune-LAYER-VARIANT...`);
the variant with the highest measured Fast@1.0 (vs tvm-naive, leka.bench.metrics) is kept; a tie (on a
few dev tasks under timing noise, often 0 against 0) goes to the higher geomean speedup of the correct
samples, then to the earlier variant in the config's list. The choice then runs on the test split in the main table,
beside the same entry with the default prompts (row LABEL-default-prompts), and the report names it. Variants live in prompts/<layer>/<family>.<variant>.md, per target family.
"""
from __future__ import annotations

from typing import Any

from leka.errors import LekaError

METRIC = "Fast@1.0"


def tune_prompts(runner: Any) -> dict[str, Any]:
    """Returns {"chosen": {target: {layer: variant}}, "trials": [{target, layer, variant, run_id, Fast@1.0,
    Correct@1, tasks}]}."""
    from leka.bench import metrics
    from leka.proposers.prompting import available_variants
    from leka.targets import get_target

    cfg, tuning = runner.cfg, runner.cfg.tuning
    entry = cfg.entry(tuning.label)
    if not runner.llm and not entry.options.get("llm"):
        raise LekaError("prompt tuning needs a model (--llm PROVIDER:MODEL): the offline proposer uses no prompts")
    dev = "dev" if ":" not in cfg.split else cfg.split.rsplit(":", 1)[0] + ":dev"
    chosen: dict[str, dict[str, str]] = {}
    trials: list[dict[str, Any]] = []
    for target in cfg.targets:
        family = get_target(target).family
        current: dict[str, str] = {}
        for layer in tuning.layers:
            missing = [v for v in tuning.variants if v not in available_variants(layer, family)]
            if missing:
                raise LekaError(f"prompt tuning: no prompts/{layer}/{family}.{missing[0]}.md")
            scores = []
            for variant in tuning.variants:
                prompts = {**current, layer: variant}
                p = runner.plan(entry, target, stage=f"tune-{layer}-{variant}", split=dev, limit=tuning.dev_limit,
                                extra_options={"prompts": prompts}, extra={"prompts": prompts})
                runner.check_fresh([p])
                records = runner.execute(p)
                s = metrics.summarize(records)
                score = (s.fast_at[METRIC] or 0.0, s.geomean_speedup or 0.0)
                scores.append(score)
                trials.append({"target": target, "layer": layer, "variant": variant, "run_id": p.run_id,
                               METRIC: score[0], "geomean": s.geomean_speedup, "Correct@1": s.correct_at_1,
                               "tasks": s.tasks})
            current[layer] = tuning.variants[scores.index(max(scores))]  # index(): ties to the earlier
            runner.say(f"prompt tuning {target}: {layer} -> {current[layer]} ("
                       + ", ".join(f"{v} {f:.2f} / {g:.2f}x" for v, (f, g) in zip(tuning.variants, scores))
                       + f" {METRIC} / geomean on dev)")
        chosen[target] = current
    return {"chosen": chosen, "trials": trials, "metric": METRIC, "dev_split": dev}
