"""Wire format between the evaluator and its worker: data, never objects.

A frame is ``MAGIC | u64 header length | u64 payload length | JSON header | payload``. The header holds
the message (nested dict/list/str/int/float/bool/None) with every numpy array replaced by
``{"$nd": i}``, plus ``"$arrays"``: one ``[dtype, shape, offset, nbytes]`` per array, whose bytes lie in
the payload. Decoding checks every size and dtype against an allow-list and builds arrays with
``np.frombuffer``: nothing a worker sends is unpickled or evaluated, and a malformed frame is a
``WireError`` with a one-line reason (the evaluator records it as a crash of that candidate).
"""
from __future__ import annotations

import json
import math
import os
import select
import struct
import time
from typing import Any

import numpy as np

MAGIC = b"LKW1"
_PREFIX = struct.Struct(">4sQQ")
MAX_HEADER = 16 << 20  # JSON part: messages are small apart from their arrays
MAX_FRAME = 4 << 30  # header + arrays; a larger frame is refused before anything is read
_ALIGN = 64  # arrays start at aligned offsets in the payload (np.frombuffer views stay aligned)
DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "float32", "float64"})
_ND = "$nd"
_ARRAYS = "$arrays"


class WireError(Exception):
    """A frame that cannot be read: truncated, oversized, malformed, or past its deadline."""


def _flatten(obj: Any, arrays: list[np.ndarray], depth: int = 0) -> Any:
    if depth > 64:
        raise WireError("message nested deeper than 64 levels")
    if isinstance(obj, np.ndarray):
        if str(obj.dtype) not in DTYPES:
            raise WireError(f"array dtype {obj.dtype} is not sent over the wire")
        arrays.append(obj if obj.flags.c_contiguous else obj.copy(order="C"))  # (ascontiguousarray makes 0-d 1-d)
        return {_ND: len(arrays) - 1}
    if isinstance(obj, dict):
        if _ND in obj or _ARRAYS in obj:
            raise WireError(f"message keys {_ND!r}/{_ARRAYS!r} are reserved")
        return {str(k): _flatten(v, arrays, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_flatten(v, arrays, depth + 1) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    raise WireError(f"{type(obj).__name__} is not sent over the wire")


def encode(msg: dict[str, Any]) -> list[bytes | memoryview]:
    """The frame for one message, as buffers to write in order (arrays are not copied)."""
    arrays: list[np.ndarray] = []
    body = _flatten(msg, arrays)
    table: list[list[Any]] = []
    chunks: list[bytes | memoryview] = []
    offset = 0
    for a in arrays:
        pad = -offset % _ALIGN
        if pad:
            chunks.append(bytes(pad))
        offset += pad
        table.append([str(a.dtype), list(a.shape), offset, a.nbytes])
        chunks.append(a.data.cast("B") if a.nbytes else b"")  # a.data: the array's memoryview
        offset += a.nbytes
    body[_ARRAYS] = table
    header = json.dumps(body, allow_nan=True, separators=(",", ":")).encode()
    return [_PREFIX.pack(MAGIC, len(header), offset), header, *chunks]


def _check_table(table: Any, payload_len: int) -> list[tuple[str, tuple[int, ...], int, int]]:
    if not isinstance(table, list):
        raise WireError("frame has no array table")
    out = []
    for entry in table:
        if not (isinstance(entry, list) and len(entry) == 4):
            raise WireError("malformed array entry")
        dtype, shape, offset, nbytes = entry
        if dtype not in DTYPES:
            raise WireError(f"array dtype {str(dtype)[:40]!r} not allowed")
        if not (isinstance(shape, list) and len(shape) <= 16
                and all(type(d) is int and d >= 0 for d in shape)):
            raise WireError("malformed array shape")
        if not (type(offset) is int and type(nbytes) is int and 0 <= offset and offset + nbytes <= payload_len):
            raise WireError("array bytes outside the payload")
        if math.prod(shape) * np.dtype(dtype).itemsize != nbytes:
            raise WireError(f"array size mismatch: {dtype}{shape} is not {nbytes} bytes")
        out.append((dtype, tuple(shape), offset, nbytes))
    return out


def _rebuild(obj: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(obj, dict):
        if _ND in obj:
            i = obj[_ND]
            if len(obj) != 1 or type(i) is not int or not 0 <= i < len(arrays):
                raise WireError("bad array reference")
            return arrays[i]
        return {k: _rebuild(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rebuild(v, arrays) for v in obj]
    return obj


def decode(header: bytes, payload: bytearray) -> dict[str, Any]:
    """The message of one frame (its prefix already read and checked)."""
    try:
        body = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise WireError(f"frame header is not JSON: {type(e).__name__}") from None
    if not isinstance(body, dict):
        raise WireError("frame header is not a JSON object")
    table = _check_table(body.pop(_ARRAYS, None), len(payload))
    view = memoryview(payload)
    arrays = [np.frombuffer(view[o:o + n], dtype=np.dtype(d)).reshape(s) for d, s, o, n in table]
    try:
        return _rebuild(body, arrays)
    except RecursionError:
        raise WireError("message nested too deeply") from None


def check_prefix(prefix: bytes, max_frame: int = MAX_FRAME) -> tuple[int, int]:
    if len(prefix) != _PREFIX.size:
        raise WireError("truncated frame")
    magic, hlen, plen = _PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise WireError(f"not a frame (starts with {magic[:4]!r})")
    if hlen > MAX_HEADER or hlen + plen > max_frame:
        raise WireError(f"frame of {hlen + plen} bytes exceeds the {max_frame}-byte bound")
    return hlen, plen


# -- blocking I/O on pipes: the worker side ---------------------------------------------------------
def write_frame(fd: int, msg: dict[str, Any], deadline: float | None = None) -> None:
    """Write one frame; with a deadline (non-blocking fd) give up with WireError when it passes."""
    for buf in encode(msg):
        view = memoryview(buf).cast("B")
        while view:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [fd], [], left)[1]:
                    raise WireError("timed out writing a frame")
            try:
                view = view[os.write(fd, view[:1 << 20]):]
            except BlockingIOError:
                continue


def _read_exact(fd: int, n: int, deadline: float | None) -> bytearray:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        try:
            k = os.readv(fd, [view[got:got + (1 << 22)]])
        except BlockingIOError:
            continue
        if k == 0:
            raise EOFError
        got += k
    return buf


def read_frame(fd: int, deadline: float | None = None, max_frame: int = MAX_FRAME) -> dict[str, Any]:
    """Read one frame. EOFError when the other side closed before a frame began, TimeoutError when the
    deadline passes first; WireError for a malformed, truncated or oversized frame."""
    prefix = _read_exact(fd, _PREFIX.size, deadline)
    hlen, plen = check_prefix(bytes(prefix), max_frame)
    try:
        header = _read_exact(fd, hlen, deadline)
        payload = _read_exact(fd, plen, deadline)
    except EOFError:
        raise WireError("truncated frame") from None
    return decode(bytes(header), payload)
