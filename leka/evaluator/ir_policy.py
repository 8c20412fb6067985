"""What a parsed candidate may call: checked in the worker after parsing and before building.

Valid TIR can call out of the kernel: ``T.call_extern("int32", "system", ...)`` compiles to a C call of
any symbol the process can resolve, ``T.call_packed`` to any registered global function, an LLVM
intrinsic can rewrite registers (``llvm.write_register``), and the runtime-level ops of lowered code
(``tvm_struct_set``, ``address_of``, pointer arithmetic) reach memory through handles. A candidate is
pre-lowering TIR (or a Relax graph over its own PrimFuncs) and needs none of that, so:

- extern calls (``tirx.call_extern``, ``tirx.call_pure_extern``) only to the C/CUDA math functions
  (``MATH_FUNCTIONS``) with numeric arguments;
- LLVM intrinsics only from the math and SIMD-arithmetic families (``LLVM_MATH_INTRINSICS``, ``LLVM_SIMD_PREFIXES``);
- no packed calls of any kind, no other extern-style op, none of the runtime ops in ``RUNTIME_OPS``,
  no ``reinterpret`` to or from a handle;
- Relax: no ``R.call_packed`` (a call of an ExternFunc), ``call_pure_packed``, ``call_dps_packed``,
  ``call_inplace_packed``, ``call_builtin_with_ctx``, ``call_py_func``, ExternFunc anywhere, and
  ``R.call_tir`` only to a PrimFunc of the module itself.

Out-of-bounds buffer indexing is still expressible in TIR (TIR does not check bounds); containing a
kernel that corrupts memory is the sandbox's job, not this policy's.
"""
from __future__ import annotations

import functools
from typing import Any

from leka.errors import LekaError

_C_MATH = ("exp exp2 exp10 expm1 log log2 log10 log1p sqrt cbrt rsqrt pow sin cos tan asin acos atan atan2 "
           "sinh cosh tanh asinh acosh atanh erf erfc tgamma lgamma fabs floor ceil round trunc nearbyint "
           "rint fmod remainder fmin fmax fma hypot copysign ldexp").split()
# C99 double and float (f suffix) forms, and the CUDA device intrinsics TVM's CUDA lowering emits.
MATH_FUNCTIONS = frozenset(_C_MATH + [f + "f" for f in _C_MATH]
                           + ["__expf", "__exp10f", "__logf", "__log2f", "__log10f", "__powf", "__sinf",
                              "__cosf", "__tanf", "__fdividef", "__saturatef", "__frsqrt_rn", "__fsqrt_rn",
                              "hexp", "hlog", "hsqrt", "hrsqrt", "hsin", "hcos", "htanh", "h2exp"])
# LLVM intrinsics: math (what TVM's own LLVM intrinsic lowering emits for T.exp, T.sqrt ...), integer
# bit arithmetic and the x86/Arm SIMD arithmetic families used by tensorized dot products.
LLVM_MATH_INTRINSICS = tuple(f"llvm.{n}" for n in (
    "exp exp2 exp10 log log2 log10 sqrt fabs floor ceil round roundeven trunc nearbyint rint pow powi sin "
    "cos tan asin acos atan atan2 sinh cosh tanh fma fmuladd copysign minnum maxnum minimum maximum ctpop "
    "ctlz cttz abs smax smin umax umin sadd.sat ssub.sat uadd.sat usub.sat bswap bitreverse fshl fshr "
    "ldexp").split())
LLVM_SIMD_PREFIXES = ("llvm.x86.avx512.vpdp", "llvm.x86.avx512.pmaddw", "llvm.x86.avx512.pmaddubs",
                        "llvm.x86.avx2.pmadd", "llvm.x86.avx512.vpmadd", "llvm.x86.sse", "llvm.x86.avx.",
                        "llvm.x86.avx2.", "llvm.x86.fma.", "llvm.aarch64.neon.", "llvm.arm.neon.")
_LLVM_DENY_WORDS = ("register", "stack", "address", "frame", "trap", "setjmp", "longjmp", "eh.", "store",
                    "load", "gather", "scatter", "prefetch", "clflush", "cpuid", "rdtsc", "xsave", "xrstor",
                    "wrfs", "wrgs", "rdfs", "rdgs", "ldmxcsr", "stmxcsr")
RUNTIME_OPS = frozenset({
    "tirx.address_of", "tirx.tvm_struct_set", "tirx.tvm_struct_get", "tirx.tvm_stack_alloca",
    "tirx.tvm_stack_make_array", "tirx.tvm_stack_make_shape", "tirx.tvm_static_handle",
    "tirx.tvm_throw_last_error", "tirx.lookup_param", "tirx.handle_add_byte_offset", "tirx.ptr_byte_offset",
    "tirx.tvm_kernel_replace_point", "tirx.TVMBackendAllocWorkspace", "tirx.TVMBackendFreeWorkspace",
    "tirx.call_ffi_kernel", "tirx.cuda.func_call"})
_EXTERN_OPS = ("tirx.call_extern", "tirx.call_pure_extern")
_LLVM_OPS = ("tirx.call_llvm_intrin", "tirx.call_llvm_pure_intrin")
_RELAX_DENIED = frozenset({"relax.call_pure_packed", "relax.call_dps_packed", "relax.call_inplace_packed",
                           "relax.call_builtin_with_ctx", "relax.call_py_func", "relax.vm.call_tir_dyn"})
_RELAX_CALL_TIR = frozenset({"relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad",
                             "relax.dist.call_tir_local_view"})


class IRPolicyViolation(LekaError):
    """The candidate's IR calls something outside the kernel; the message names the call."""


def check_ir(mod: Any, target: Any = None) -> None:
    """Raise IRPolicyViolation for the first call `mod` (IRModule or PrimFunc) may not make.
    `target` is accepted for symmetry with the build; the policy is the same for every target."""
    import tvm
    import tvm_ffi
    from tvm import relax

    if not isinstance(mod, tvm.IRModule):
        mod = tvm.IRModule({"main": mod})
    prim_funcs = {gv.name_hint for gv, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)}
    for gv, f in mod.functions_items():
        if isinstance(f, relax.ExternFunc):
            raise IRPolicyViolation(f"ExternFunc '{f.global_symbol}' ('{gv.name_hint}') is not allowed")

    found: list[IRPolicyViolation] = []   # raised after the walk: the FFI visit wraps exceptions

    def on_call(call: Any, visitor: Any) -> Any:
        if not found:
            try:
                _check_call(call, prim_funcs)
            except IRPolicyViolation as v:
                found.append(v)
                return None
            return visitor.default_visit(call)
        return None

    def on_extern_func(ext: Any, visitor: Any) -> Any:
        found.append(IRPolicyViolation(f"packed call '{ext.global_symbol}' (an ExternFunc, e.g. "
                                       "R.call_packed) is not allowed"))

    tvm_ffi.structural_visit(mod, [(tvm.ir.Call, on_call), (relax.ExternFunc, on_extern_func)])
    if found:
        raise found[0]


def _check_call(call: Any, prim_funcs: set[str]) -> None:
    import tvm
    from tvm import relax

    op = call.op
    if isinstance(op, relax.ExternFunc):
        raise IRPolicyViolation(f"packed call '{op.global_symbol}' (R.call_packed) is not allowed")
    if not isinstance(op, tvm.ir.Op):
        return  # a call of one of the module's own functions (GlobalVar)
    name = op.name
    if name in _EXTERN_OPS:
        _check_extern(call)
    elif name in _LLVM_OPS:
        _check_llvm_intrinsic(call)
    elif name in _RELAX_CALL_TIR:
        callee = call.args[0] if len(call.args) else None
        if not (isinstance(callee, tvm.ir.GlobalVar) and callee.name_hint in prim_funcs):
            shown = getattr(callee, "name_hint", callee)
            raise IRPolicyViolation(f"{name} of '{shown}' is not allowed (only PrimFuncs of this module)")
    elif name in _RELAX_DENIED or "packed" in name or "extern" in name:
        first = call.args[0] if len(call.args) else None
        callee = getattr(first, "value", None) or getattr(first, "global_symbol", None) \
            or getattr(first, "name_hint", None)
        what = f"'{callee}' ({name})" if isinstance(callee, str) else f"op '{name}'"
        raise IRPolicyViolation(f"packed/extern call {what} is not allowed in a candidate")
    elif name in RUNTIME_OPS:
        raise IRPolicyViolation(f"runtime op '{name}' is not allowed in a candidate (candidates are TIR "
                                "before lowering)")
    elif name == "tirx.reinterpret" and (_is_handle(call) or any(_is_handle(a) for a in call.args)):
        raise IRPolicyViolation("reinterpret to or from a handle (pointer) is not allowed")


def _check_extern(call: Any) -> None:
    import tvm

    callee = call.args[0] if len(call.args) else None
    fname = callee.value if isinstance(callee, tvm.ir.StringImm) else str(callee)
    if fname not in MATH_FUNCTIONS:
        raise IRPolicyViolation(f"extern call '{fname}' is not allowed (allowed: math functions expf, exp, "
                                "logf, sqrtf, tanhf, powf, fabsf, fmaf, ...)")
    for a in list(call.args)[1:]:
        if _is_handle(a) or isinstance(a, tvm.ir.StringImm):
            raise IRPolicyViolation(f"extern call '{fname}' with a pointer or string argument is not allowed")


# Intrinsics late in LLVM's id order (targets sort alphabetically, xcore last): ids from 1 to the largest of
# theirs are in LLVM's name table. Asking LLVM the name of an id past its table reads out of bounds (SIGSEGV:
# `leka remote batch` runs this check in the CLI process), so an id is checked against this range first.
_LATE_INTRINSICS = ("llvm.xcore.zext", "llvm.x86.xtest", "llvm.x86.avx512.vpdpbusd.512", "llvm.fma")


@functools.lru_cache(maxsize=1)
def _last_intrinsic_id() -> int:
    import tvm

    return max(int(tvm.target.codegen.llvm_lookup_intrinsic_id(n)) for n in _LATE_INTRINSICS)


def _check_llvm_intrinsic(call: Any) -> None:
    import tvm

    first = call.args[0] if len(call.args) else None
    if isinstance(first, tvm.tirx.IntImm) and not 1 <= int(first.value) <= _last_intrinsic_id():
        raise IRPolicyViolation(f"LLVM intrinsic id {int(first.value)} is not an intrinsic LLVM knows "
                                f"(ids 1-{_last_intrinsic_id()})")
    try:
        iname = str(tvm.target.codegen.llvm_get_intrinsic_name(int(first.value))) \
            if isinstance(first, tvm.tirx.IntImm) else str(getattr(first, "value", first))
    except Exception:  # noqa: BLE001  (an id LLVM does not know)
        iname = f"<unknown intrinsic {first}>"
    math = any(iname == m or iname.startswith(m + ".") for m in LLVM_MATH_INTRINSICS)
    ok = (math or iname.startswith(LLVM_SIMD_PREFIXES)) and not any(w in iname for w in _LLVM_DENY_WORDS)
    if not ok:
        raise IRPolicyViolation(f"LLVM intrinsic '{iname}' is not allowed (allowed: math and SIMD "
                                "arithmetic intrinsics such as llvm.exp.*, llvm.fma.*, llvm.x86.avx512.vpdp*)")
    if any(_is_handle(a) for a in list(call.args)[1:]):
        raise IRPolicyViolation(f"LLVM intrinsic '{iname}' with a pointer argument is not allowed")


def _is_handle(expr: Any) -> bool:
    ty = getattr(expr, "ty", None)
    text = str(ty) if ty is not None else ""
    return text == "handle" or text.startswith(("T.handle", "handle")) or "Pointer" in type(ty).__name__
