"""Files from outside (a user's inputs, a remote host's folder, an artifact's files) read without trusting
them. An .npz has every member's shape and dtype read from its .npy header, and the sizes they declare are
checked against a limit before anything is decompressed (a 2 MB file may declare a 2 GiB array); object
arrays (pickles) are refused. A truncated or malformed file is a one-line error, never a traceback.
sha256_file digests a file for a record kept on this side (a manifest, a remote job's record)."""
from __future__ import annotations

import hashlib
import json
import math
import zipfile
from pathlib import Path

import numpy as np

from leka.errors import LekaError

DEFAULT_LIMIT_BYTES = 1 << 30  # 1 GiB: more than any check or trial file of the benchmark needs


def npz_headers(path: str | Path, what: str = "") -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """{name: (shape, dtype)} of every array, from the .npy headers alone (nothing decompressed but those)."""
    label = what or str(path)
    try:
        with zipfile.ZipFile(path) as zf:
            return {_name(m): _header(zf, m, label) for m in zf.namelist()}
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise LekaError(f"{label}: not a readable .npz file ({_why(e)})") from None


def load_npz(path: str | Path, limit_bytes: int = DEFAULT_LIMIT_BYTES, what: str = "") -> dict[str, np.ndarray]:
    """The arrays of an .npz, refused in one line when its headers declare more than `limit_bytes` in all."""
    label = what or str(path)
    heads = npz_headers(path, what)
    total = sum(math.prod(s) * d.itemsize for s, d in heads.values())
    if total > limit_bytes:
        big = max(heads, key=lambda k: math.prod(heads[k][0]) * heads[k][1].itemsize)
        raise LekaError(f"{label}: declares {total:,} bytes of arrays (array {big!r}: "
                        f"{'x'.join(map(str, heads[big][0])) or 'scalar'} {heads[big][1]}), over the "
                        f"{limit_bytes:,}-byte limit")
    try:
        with zipfile.ZipFile(path) as zf:
            out = {}
            for m in zf.namelist():
                with zf.open(m) as f:
                    out[_name(m)] = np.lib.format.read_array(f, allow_pickle=False)
            return out
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise LekaError(f"{label}: not a readable .npz file ({_why(e)})") from None


def _name(member: str) -> str:
    return member[:-4] if member.endswith(".npy") else member


def _header(zf: zipfile.ZipFile, member: str, label: str) -> tuple[tuple[int, ...], np.dtype]:
    with zf.open(member) as f:
        version = np.lib.format.read_magic(f)
        read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in read:
            raise LekaError(f"{label}: array {_name(member)!r} has .npy format {version}, not 1.0 or 2.0")
        shape, _fortran, dtype = read[version](f)
    if dtype.hasobject:
        raise LekaError(f"{label}: array {_name(member)!r} holds Python objects (a pickle), refused")
    if any(not isinstance(n, int) or n < 0 for n in shape):
        raise LekaError(f"{label}: array {_name(member)!r} declares a malformed shape {shape!r}")
    return tuple(shape), dtype


def _why(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:160]}" if text else type(e).__name__


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_json_object(path: Path, what: str) -> dict:
    """A JSON object from a file, or a one-line error naming the file."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LekaError(f"{path}: malformed {what} ({type(e).__name__}: {str(e)[:120]})") from None
    if not isinstance(data, dict):
        raise LekaError(f"{path}: malformed {what} (not a JSON object)")
    return data
