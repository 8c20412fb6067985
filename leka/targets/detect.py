"""Detect the presets that can run on this machine: host CPU (LLVM), OpenCL (PoCL), CUDA."""
from __future__ import annotations

import ctypes.util
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CACHE = Path(os.environ.get("LEKA_CACHE", Path.home() / ".cache" / "leka"))


def host_num_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                info.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    return info


def _cache_bytes(level: int, kind: str) -> int | None:
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for idx in sorted(base.glob("index*")):
        try:
            if int((idx / "level").read_text()) == level and (idx / "type").read_text().strip() in kind:
                s = (idx / "size").read_text().strip()
                m = re.match(r"(\d+)([KMG]?)", s)
                if m:
                    return int(m.group(1)) * {"": 1, "K": 1024, "M": 1 << 20, "G": 1 << 30}[m.group(2)]
        except (OSError, ValueError):
            continue
    return None


def _measure_copy_bandwidth_gbs() -> float:
    """Measured once (numpy copy of 64 MiB, best of 5) and cached: roofline needs a real figure."""
    cache = CACHE / "host_bandwidth.json"
    try:
        return float(json.loads(cache.read_text())["copy_gbs"])
    except (OSError, ValueError, KeyError):
        pass
    import numpy as np

    a = np.ones(8 << 20, dtype=np.float64)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t)
    gbs = 2 * a.nbytes / best / 1e9  # read + write
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"copy_gbs": gbs}))
    except OSError:
        pass
    return gbs


# Vector width of x86 cores a build-only target dict may name (what the rules size vectors by, in place of the
# host's detected width); an mcpu not listed gets no vector_bits fact and the rules' 128-bit default.
VECTOR_BITS_BY_MCPU = {
    **dict.fromkeys(("skylake-avx512", "cascadelake", "cooperlake", "icelake-server", "icelake-client",
                     "tigerlake", "sapphirerapids", "emeraldrapids", "graniterapids", "znver4", "znver5"), 512),
    **dict.fromkeys(("haswell", "broadwell", "skylake", "alderlake", "raptorlake", "znver1", "znver2", "znver3"),
                    256),
}


def cpu_dict_facts(target: dict[str, Any]) -> dict[str, Any]:
    """Facts of a CPU target dict this host cannot run: its cores and, for a known x86 mcpu, its vector width
    (never this host's: a cascadelake build must not take the width of whatever CPU builds it)."""
    facts: dict[str, Any] = {}
    if isinstance(target.get("num-cores"), int):
        facts["cores"] = target["num-cores"]
    bits = VECTOR_BITS_BY_MCPU.get(str(target.get("mcpu", "")))
    if bits:
        facts["vector_bits"] = bits
    return facts


def detect_host_cpu():
    from leka.targets import TargetPreset
    import tvm

    mcpu = tvm.target.codegen.llvm_get_system_cpu()
    cores = host_num_cores()
    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    vector_bits = 512 if "avx512f" in flags else 256 if "avx2" in flags else 128
    mhz = float(info.get("cpu MHz", "2000") or 2000)
    # 2 FMA pipes x 2 flops per FMA x lanes: the usual peak formula for recent x86 / Neoverse cores.
    peak = cores * mhz / 1e3 * (vector_bits // 32) * 2 * 2
    facts: dict[str, Any] = {
        "cores": cores, "vector_bits": vector_bits, "mcpu": mcpu, "model": info.get("model name", ""),
        "l1d_bytes": _cache_bytes(1, "Data"), "l2_bytes": _cache_bytes(2, "Unified"),
        "l3_bytes": _cache_bytes(3, "Unified"), "peak_fp32_gflops": round(peak, 1),
        "mem_bw_gbs": round(_measure_copy_bandwidth_gbs(), 1), "memory_budget_bytes": _mem_total_bytes(),
        "source": "detected: /proc/cpuinfo, /sys cache sizes; peak = cores*GHz*lanes*2 FMA pipes*2; "
                  "mem_bw_gbs = measured numpy copy bandwidth (cached)",
    }
    target = {"kind": "llvm", "mtriple": "x86_64-linux-gnu" if os.uname().machine == "x86_64" else
              f"{os.uname().machine}-linux-gnu", "mcpu": mcpu, "num-cores": cores}
    return TargetPreset(name="host-cpu", family="cpu", target=target, runnable=True, runner="llvm",
                        description=f"this machine's CPU via LLVM ({mcpu}, {cores} cores)", facts=facts)


def _mem_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def detect_opencl():
    from leka.targets import TargetPreset

    why = ""
    device_name = ""
    facts: dict[str, Any] = {"source": "detected through pyopencl"}
    try:
        import pyopencl as cl

        devs = [d for p in cl.get_platforms() for d in p.get_devices()]
        if not devs:
            why = "no OpenCL device found (install pocl-opencl-icd)"
        else:
            d = devs[0]
            device_name = d.name
            facts.update(cores=d.max_compute_units, shared_mem_per_block_bytes=d.local_mem_size,
                         max_threads_per_block=d.max_work_group_size, memory_budget_bytes=d.global_mem_size,
                         peak_fp32_gflops=None, mem_bw_gbs=None, device=d.name, platform=d.platform.name)
    except Exception as e:  # ImportError, or an ICD loader with no platform
        why = f"OpenCL unavailable: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    target = {"kind": "opencl", "max_threads_per_block": int(facts.get("max_threads_per_block", 256) or 256),
              "max_shared_memory_per_block": int(facts.get("shared_mem_per_block_bytes", 32768) or 32768),
              "thread_warp_size": 1}
    return TargetPreset(name="opencl-pocl", family="opencl", target=target, runnable=not why,
                        runner="opencl-pyopencl" if not why else None,
                        description=f"OpenCL C run through pyopencl ({device_name or 'no device'})",
                        facts=facts, why_not_runnable=why)


def detect_cuda():
    from leka.targets import TargetPreset

    arch, name, why = "sm_90", "", ""
    smi = shutil.which("nvidia-smi")
    if smi and ctypes.util.find_library("cuda"):
        try:
            out = subprocess.run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout.strip().splitlines()
            if out:
                name, cap = [s.strip() for s in out[0].split(",")]
                arch = "sm_" + cap.replace(".", "")
        except (OSError, subprocess.SubprocessError, ValueError):
            why = "nvidia-smi failed"
    else:
        why = "no NVIDIA GPU/driver on this machine (CUDA source still builds; see docs/cuda.md)"
    runnable = bool(name) and not why
    target = {"kind": "cuda", "arch": arch, "max_shared_memory_per_block": 49152, "max_threads_per_block": 1024,
              "thread_warp_size": 32}
    facts = {"gpu": name or None, "arch": arch, "shared_mem_per_block_bytes": 49152,
             "source": "detected through nvidia-smi" if name else "default arch sm_90 (no GPU detected)"}
    return TargetPreset(name="cuda", family="cuda", target=target, runnable=runnable,
                        runner="cuda" if runnable else None,
                        description=f"local NVIDIA GPU ({name})" if name else "local NVIDIA GPU (none detected)",
                        facts=facts, why_not_runnable=why)
