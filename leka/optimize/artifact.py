"""The output directory: written whole or not at all.

OUT holds model.so (the Relax VM executable from export_library), manifest.json, report.md and
report.html, and check/ (inputs and ONNX Runtime's outputs, so a device can verify the build where it
runs). The manifest records the sha256 of model.so and of the check files; `leka run` verifies them before
it loads anything. Everything is written to a temporary sibling directory and renamed into place at the end; an OUT
that exists must be a previous leka artifact (it is then replaced), anything else is refused.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from . import OptimizeError

MANIFEST = "manifest.json"
LIBRARY = "model.so"
FORMAT = "leka-optimized-model/1"
CHECK_INPUTS, CHECK_EXPECTED = "check/inputs.npz", "check/expected.npz"
SIGNED = (LIBRARY, CHECK_INPUTS, CHECK_EXPECTED)  # files whose sha256 the manifest records ("digests")


def is_artifact(path: Path) -> bool:
    try:
        return json.loads((path / MANIFEST).read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def check_out(out: str | Path) -> Path:
    """Refuse an OUT that exists and is not a previous leka artifact (before any work is done)."""
    p = Path(out)
    if p.exists() and not (p.is_dir() and (is_artifact(p) or not any(p.iterdir()))):
        raise OptimizeError(f"output {out} exists and is not a leka artifact (no {MANIFEST} of format {FORMAT}); "
                            "choose another -o or remove it")
    above = next((a for a in p.parents if a.exists()), None)  # missing folders are made when OUT is written
    if above is not None and not above.is_dir():
        raise OptimizeError(f"output {out}: {above} is a file, not a folder")
    return p


@contextmanager
def staging(out: Path) -> Iterator[Path]:
    """A temporary directory next to OUT (its missing parent folders made); on success it replaces OUT, on any
    failure it is removed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the artifact is meant to be shared and deployed
    try:
        yield tmp
        old = None
        if out.exists():
            old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:6]}"
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def load_manifest(out: str | Path) -> dict[str, Any]:
    p = Path(out)
    if not is_artifact(p):
        raise OptimizeError(f"{out} is not a leka artifact (no {MANIFEST} of format {FORMAT}); "
                            "make one with `leka optimize MODEL -o OUT`")
    manifest = json.loads((p / MANIFEST).read_text())
    if not isinstance(manifest.get("inputs"), list) or not isinstance(manifest.get("outputs"), list):
        raise OptimizeError(f"{p / MANIFEST}: malformed (no list of inputs or outputs)")
    for spec in manifest["inputs"]:
        if not _tensor_spec(spec):
            raise OptimizeError(f"{p / MANIFEST}: malformed input {str(spec)[:80]} (name, shape of whole numbers, "
                                "dtype)")
    return manifest


def _tensor_spec(spec: Any) -> bool:
    import numpy as np

    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not isinstance(spec.get("shape"), list):
        return False
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in spec["shape"]):
        return False
    try:
        return np.dtype(str(spec.get("dtype"))).kind in "biuf"
    except TypeError:
        return False


def file_digests(out: Path) -> dict[str, str]:
    """sha256 of every file `leka run` reads (the library and the check files), for the manifest."""
    from leka.outside_files import sha256_file

    return {name: sha256_file(out / name) for name in SIGNED}


def verify_digests(out: str | Path, manifest: dict[str, Any]) -> None:
    """Refuse, in one line and before anything is loaded, a file that is not the one the manifest records
    (a swapped model.so would run its constructor at load)."""
    from leka.outside_files import sha256_file

    digests = manifest.get("digests")
    if not isinstance(digests, dict) or set(digests) != set(SIGNED):
        raise OptimizeError(f"{out}: the manifest records no sha256 of {', '.join(SIGNED)} (made before digests, "
                            "or edited): rebuild it with `leka optimize`")
    for name in SIGNED:
        path = Path(out) / name
        if not path.is_file() or sha256_file(path) != digests[name]:
            raise OptimizeError(f"{path}: not the file the manifest records (sha256 differs or the file is "
                                "missing); refused before loading")
