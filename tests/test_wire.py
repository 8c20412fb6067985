"""leka.evaluator.wire: frames of JSON + raw array bytes between the evaluator and its worker. Round trips keep
today's request/reply shapes; every malformed frame is a one-line WireError, and nothing is ever unpickled."""
from __future__ import annotations

import contextlib
import json
import os
import pickle
import struct
import threading
import time

import numpy as np
import pytest

from leka.evaluator import wire
from leka.evaluator.wire import MAGIC, WireError, decode, encode, read_frame, write_frame


def _frame_bytes(msg) -> bytes:
    return b"".join(bytes(b) for b in encode(msg))


def _raw(header: dict, payload: bytes = b"") -> bytes:
    h = json.dumps(header).encode()
    return struct.pack(">4sQQ", MAGIC, len(h), len(payload)) + h + payload


def _pipe_read(data: bytes, **kw):
    r, w = os.pipe()

    def feed():  # a pipe holds 64 KiB: write while the frame is read
        with contextlib.suppress(BrokenPipeError):
            os.write(w, data)
        os.close(w)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        return read_frame(r, time.monotonic() + 5, **kw)
    finally:
        os.close(r)
        writer.join()


def test_round_trip_keeps_shapes_values_and_dtypes():
    arrays = [np.arange(12, dtype=np.float32).reshape(3, 4), np.array([1, -2], np.int8), np.zeros((0, 3), np.int64),
              np.array(True), np.arange(6, dtype=np.uint16)[::2], np.float16([1.5, np.nan])]
    msg = {"op": "run", "args": [("X", (3, 4), "float32", "input")], "trials": [arrays], "seed": np.int64(7),
           "nested": {"none": None, "flag": False, "x": 1.5, "inf": float("inf")}}
    got = _pipe_read(_frame_bytes(msg))
    assert got["op"] == "run" and got["seed"] == 7 and got["args"] == [["X", [3, 4], "float32", "input"]]
    assert got["nested"] == {"none": None, "flag": False, "x": 1.5, "inf": float("inf")}
    for a, b in zip(arrays, got["trials"][0], strict=True):
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(a, b)
    assert got["trials"][0][0].flags.writeable  # the evaluator may work on them in place


def test_decoder_never_unpickles(monkeypatch):
    calls = []
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(pickle, "Unpickler", lambda *a, **k: calls.append(a))

    class Boom:
        def __reduce__(self):
            return (os.system, ("touch /tmp/leka-wire-pwned",))

    evil = pickle.dumps({"ok": True, "x": Boom()})
    with pytest.raises(WireError, match="not a frame"):
        _pipe_read(evil.ljust(64, b"\0"))
    # A pickle in the payload of a well-formed frame is just bytes: an array of uint8 at most.
    with pytest.raises(WireError):
        _pipe_read(_raw({"x": {"$nd": 0}, "$arrays": [["object", [1], 0, len(evil)]]}, evil))
    assert calls == [] and not os.path.exists("/tmp/leka-wire-pwned")


@pytest.mark.parametrize("header,payload,why", [
    ({"a": {"$nd": 0}, "$arrays": [["object", [2], 0, 16]]}, bytes(16), "dtype"),
    ({"a": {"$nd": 0}, "$arrays": [["float32", [2, 2], 0, 12]]}, bytes(16), "size mismatch"),
    ({"a": {"$nd": 0}, "$arrays": [["float32", [4], 8, 16]]}, bytes(16), "outside the payload"),
    ({"a": {"$nd": 0}, "$arrays": [["float32", [-4], 0, 16]]}, bytes(16), "shape"),
    ({"a": {"$nd": 3}, "$arrays": []}, b"", "bad array reference"),
    ({"a": 1}, b"", "no array table"),
])
def test_malformed_frames_are_rejected(header, payload, why):
    with pytest.raises(WireError, match=why):
        _pipe_read(_raw(header, payload))


def test_oversized_frame_is_refused_before_reading():
    prefix = struct.pack(">4sQQ", MAGIC, 10, 1 << 40)
    with pytest.raises(WireError, match="exceeds"):
        _pipe_read(prefix)
    with pytest.raises(WireError, match="exceeds"):
        _pipe_read(_frame_bytes({"a": np.zeros(1000, np.float64)}), max_frame=4000)


def test_truncated_non_json_and_deep_frames():
    full = _frame_bytes({"a": np.arange(10)})
    with pytest.raises(WireError, match="truncated"):
        _pipe_read(full[:-3])
    bad = struct.pack(">4sQQ", MAGIC, 5, 0) + b"\xff{{{{"
    with pytest.raises(WireError, match="not JSON"):
        _pipe_read(bad)
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(WireError):
        _pipe_read(struct.pack(">4sQQ", MAGIC, len(deep), 0) + deep)
    with pytest.raises(EOFError):
        _pipe_read(b"")


def test_encoder_refuses_objects():
    with pytest.raises(WireError, match="not sent"):
        encode({"f": lambda: 0})
    with pytest.raises(WireError, match="reserved"):
        encode({"$nd": 1})
    with pytest.raises(WireError, match="dtype"):
        encode({"a": np.array([object()])})


def test_read_times_out_on_a_silent_or_stalled_writer():
    r, w = os.pipe()
    try:
        os.write(w, _frame_bytes({"a": 1})[:10])  # a partial frame, then nothing
        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            read_frame(r, time.monotonic() + 0.3)
        assert time.monotonic() - t0 < 2
    finally:
        os.close(r)
        os.close(w)


def test_write_with_deadline_does_not_block_on_a_full_pipe():
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        with pytest.raises(WireError, match="timed out"):
            write_frame(w, {"a": np.zeros(1 << 20, np.uint8)}, time.monotonic() + 0.3)
    finally:
        os.close(r)
        os.close(w)


def test_decode_is_pure_data():
    header = json.dumps({"__reduce__": "os.system", "$arrays": []}).encode()
    assert decode(header, bytearray()) == {"__reduce__": "os.system"}
    assert wire.DTYPES >= {"float32", "int8", "bool"} and "object" not in wire.DTYPES
