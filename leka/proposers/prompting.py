"""Prompt templates as data: prompts/<layer>/<family>.<variant>.md, rendered with {{variable}} slots.

A template holds a system part and a user part separated by a line ``<<<user>>>``. Variables are
listed in prompts/README.md; an unknown {{slot}} left in a template is an error, not silent text.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leka.errors import LekaError

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"
DEFAULT_VARIANT = "v1"
_SLOT = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class RenderedPrompt:
    variant: str  # e.g. "schedule/cpu.v1": what an experiment cites
    system: str
    user: str

    @property
    def hash(self) -> str:
        return hashlib.sha256((self.system + "\0" + self.user).encode()).hexdigest()[:16]


def template_path(layer: str, family: str, variant: str = DEFAULT_VARIANT, root: Path | None = None) -> Path:
    path = (root or PROMPTS_DIR) / layer / f"{family}.{variant}.md"
    if not path.is_file():
        raise LekaError(f"no prompt template {path} (layer {layer!r}, family {family!r}, variant {variant!r})")
    return path


def render(layer: str, family: str, variables: dict[str, Any], variant: str = DEFAULT_VARIANT,
           root: Path | None = None) -> RenderedPrompt:
    text = template_path(layer, family, variant, root).read_text()
    if "<<<user>>>" not in text:
        raise LekaError(f"prompt template {layer}/{family}.{variant} lacks the '<<<user>>>' separator")

    def fill(m: re.Match) -> str:
        key = m.group(1)
        if key not in variables:
            raise LekaError(f"prompt template {layer}/{family}.{variant} uses {{{{{key}}}}} but it was not given")
        v = variables[key]
        return v if isinstance(v, str) else json.dumps(v, indent=1, sort_keys=True)

    system, user = text.split("<<<user>>>", 1)
    return RenderedPrompt(f"{layer}/{family}.{variant}", _SLOT.sub(fill, system).strip(),
                          _SLOT.sub(fill, user).strip())


def parse_variants(spec: Any) -> dict[str, str]:
    """Per-layer prompt variants: "schedule=v2,memory=v1" or {"schedule": "v2"} -> {layer: variant}."""
    if not spec:
        return {}
    items = spec.items() if isinstance(spec, dict) else (
        part.partition("=")[::2] for part in str(spec).split(",") if part.strip())
    out: dict[str, str] = {}
    for layer, variant in items:
        layer, variant = str(layer).strip(), str(variant).strip()
        if layer not in ("algorithm", "schedule", "memory") or not variant:
            raise LekaError(f"prompt variants {spec!r}: expected LAYER=VARIANT items, LAYER one of "
                            "algorithm, schedule, memory (e.g. schedule=v2)")
        out[layer] = variant
    return out


def available_variants(layer: str, family: str, root: Path | None = None) -> list[str]:
    """Variants present under prompts/<layer>/ for a target family, sorted (v1, v2, ...)."""
    folder = (root or PROMPTS_DIR) / layer
    return sorted(p.name[len(family) + 1:-3] for p in folder.glob(f"{family}.*.md"))


def history_text(history: list[dict[str, Any]], limit: int = 8) -> str:
    """The last measured attempts, newest last, as compact lines for a prompt."""
    if not history:
        return "(no attempts yet)"
    lines = []
    for i, h in enumerate(history[-limit:]):
        status = ("correct" if h.get("correct") else (h.get("failure") or "wrong")) if h.get("compiled", True) \
            else "compile_error"
        speed = f" speedup {h['speedup']:.2f}x" if isinstance(h.get("speedup"), (int, float)) else ""
        ms = f" {h['candidate_ms']:.4f} ms" if isinstance(h.get("candidate_ms"), (int, float)) else ""
        err = f"\n  error: {str(h.get('error'))[:300]}" if h.get("error") else ""
        summ = "\n  ".join(str(h.get("summary", "")).splitlines()[:12])
        lines.append(f"attempt {i} [{h.get('layer')}] {status}{speed}{ms}{err}\n  {summ}")
    return "\n".join(lines)
