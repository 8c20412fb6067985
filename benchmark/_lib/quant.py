"""int8 quantisation arithmetic (TFLite spec), shared by TE definitions and NumPy references.

Requantisation uses TFLite's fixed-point form with *single rounding* (TFLITE_SINGLE_ROUNDING):
    y = (acc * M + 2**(30+shift)) >> (31+shift)       M in [2**30, 2**31), shift >= 0
computed in int64, then the output zero point is added and the result clamped. Rounding is half
towards +inf, exactly reproducible in NumPy, so int8 tasks compare exactly (tolerance 0).
"""
from __future__ import annotations

import math

import numpy as np

from leka.tasks.task import ArgSpec

from . import inp

INT8_X_STD = 73.9  # std of uniform int8 in [-128, 127] minus a small zero point
INT8_W_STD = 73.3  # std of uniform int8 weights in [-127, 127]
M_LOW, M_HIGH = 1 << 30, (1 << 31) - 1


def shift_for(fan_in: int, target_std: float = 40.0, x_std: float = INT8_X_STD, w_std: float = INT8_W_STD) -> int:
    """Right shift that maps an int32 accumulator of `fan_in` int8 products onto ~target_std int8 units
    (M averages ~0.75 * 2**31), so outputs use the int8 range instead of saturating or collapsing."""
    acc_std = math.sqrt(fan_in) * x_std * w_std
    return max(0, round(math.log2(0.75 * acc_std / target_std)))


def requant_te(acc, mult, shift: int, zp_out: int, qmin: int = -128, qmax: int = 127, out_dtype: str = "int8"):
    """acc: int32 TE expr; mult: int32 TE expr (per-tensor or per-channel element)."""
    from tvm import te, tirx

    total = 31 + shift
    v = (acc.astype("int64") * mult.astype("int64") + tirx.const(1 << (total - 1), "int64")) >> tirx.const(total, "int64")
    v = v + tirx.const(zp_out, "int64")
    return te.min(te.max(v, tirx.const(qmin, "int64")), tirx.const(qmax, "int64")).astype(out_dtype)


def requant_np(acc: np.ndarray, mult, shift: int, zp_out: int, qmin: int = -128, qmax: int = 127,
               out_dtype: str = "int8") -> np.ndarray:
    total = 31 + shift
    a = np.rint(acc).astype(np.int64) if np.asarray(acc).dtype.kind == "f" else np.asarray(acc, np.int64)
    v = (a * np.asarray(mult, np.int64) + (1 << (total - 1))) >> total
    return np.clip(v + zp_out, qmin, qmax).astype(out_dtype)


def round_half_away_np(v: np.ndarray) -> np.ndarray:
    return np.trunc(v + np.copysign(0.5, v))


def round_half_away_te(v):
    """TFLite quantize rounds half away from zero (std::round)."""
    from tvm import te, tirx

    half = tirx.const(0.5, "float32")
    return te.if_then_else(v >= tirx.const(0.0, "float32"), te.floor(v + half), -te.floor(half - v))


def quantize_te(x, inv_scale: float, zp: int, qmin: int = -128, qmax: int = 127, out_dtype: str = "int8"):
    """x float32 TE expr -> int8: clamp(round(x * inv_scale) + zp). Multiplying by the reciprocal (not
    dividing) matches XNNPACK/TFLite kernels; the reference does the same float32 multiply."""
    from tvm import te, tirx

    q = round_half_away_te(x * tirx.const(inv_scale, "float32")) + tirx.const(float(zp), "float32")
    return te.min(te.max(q, tirx.const(float(qmin), "float32")), tirx.const(float(qmax), "float32")).astype(out_dtype)


def quantize_np(x: np.ndarray, inv_scale: float, zp: int, qmin: int = -128, qmax: int = 127,
                out_dtype: str = "int8") -> np.ndarray:
    v = x.astype(np.float32) * np.float32(inv_scale)
    return np.clip(round_half_away_np(v) + zp, qmin, qmax).astype(out_dtype)


def mult_input(name: str, n: int) -> ArgSpec:
    """Per-channel int32 multiplier input in TFLite's normalised range [2**30, 2**31)."""
    return inp(name, (n,), "int32", low=M_LOW, high=M_HIGH)


def bias_input(name: str, n: int, fan_in: int) -> ArgSpec:
    """int32 bias of a size comparable to the accumulator (TFLite: bias scale = x_scale * w_scale)."""
    b = int(min(2 ** 30, math.sqrt(fan_in) * INT8_X_STD * INT8_W_STD))
    return inp(name, (n,), "int32", low=-b, high=b)


def w8_input(name: str, shape) -> ArgSpec:
    """Symmetric int8 weights in [-127, 127] (TFLite: weight zero point 0, -128 excluded)."""
    return inp(name, shape, "int8", low=-127, high=128)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """real in (0, 1) -> (M, right_shift) with real == M * 2**-31 * 2**-right_shift (TFLite QuantizeMultiplier)."""
    frac, exp = math.frexp(real)
    m = round(frac * (1 << 31))
    if m == 1 << 31:
        m //= 2
        exp += 1
    if exp > 0:
        raise ValueError(f"multiplier {real} >= 1 is not supported here")
    return m, -exp


def fixed_mul_te(v64, mult: int, shift: int):
    """(v * M + 2**(30+shift)) >> (31+shift) on an int64 TE expression, no clamp."""
    from tvm import tirx

    total = 31 + shift
    return (v64 * tirx.const(mult, "int64") + tirx.const(1 << (total - 1), "int64")) >> tirx.const(total, "int64")


def fixed_mul_np(v: np.ndarray, mult: int, shift: int) -> np.ndarray:
    total = 31 + shift
    return (np.asarray(v, np.int64) * mult + (1 << (total - 1))) >> total


def clamp_te(v, qmin: int = -128, qmax: int = 127, out_dtype: str = "int8", dt: str = "int64"):
    from tvm import te, tirx

    return te.min(te.max(v, tirx.const(qmin, dt)), tirx.const(qmax, dt)).astype(out_dtype)


def rounding_div_np(acc: np.ndarray, count: int) -> np.ndarray:
    """TFLite average-pool rounding: half away from zero, C truncating division."""
    acc = np.asarray(acc, np.int64)
    return np.where(acc >= 0, (acc + count // 2) // count, -((-acc + count // 2) // count))


def rounding_div_te(acc, count: int, dt: str = "int32"):
    from tvm import te, tirx

    c = tirx.const(count, dt)
    h = tirx.const(count // 2, dt)
    return te.if_then_else(acc >= tirx.const(0, dt), tirx.truncdiv(acc + h, c), tirx.truncdiv(acc - h, c))


# SRAM of a Cortex-M4/M7-class MLPerf Tiny board (nRF52840: 256 KiB; STM32L4R5: 640 KiB). Set on int8
# MLPerf Tiny workloads whose naive definition (arguments + int32 intermediates) already fits, so a
# schedule may not stage buffers that the device could not hold (tests/test_suite_vision.py checks it).
MCU_SRAM_BYTES = 256 * 1024
