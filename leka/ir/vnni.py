"""x86 AVX-512 VNNI dot-product intrinsic of LEKA's own (registered by intrinsics.register_tensor_intrinsics).
TVM 0.27's `dot_16x4_vnni` (tvm.s_tir.tensor_intrin.x86) calls vpdpbusd with <16 x i32> operands; LLVM 22,
the wheel's, declares them <64 x i8>, so its modules fail LLVM's verifier ("Call parameter type does not
match function signature"). Same description, the operands passed as int8x64."""
from __future__ import annotations

VNNI_DOT = "vnni_dot_16x4_u8i8i32"  # C[16] (int32) += sum_k4 A[k] (uint8) * B[i, k] (int8), vpdpbusd zmm


def register_vnni() -> None:
    """Register VNNI_DOT with TVM (call once per process, after TVM's own tables)."""
    from tvm.s_tir import TensorIntrin
    from tvm.s_tir.tensor_intrin.x86 import dot_product_16x4_u8i8i32_desc
    from tvm.script import tirx as T

    # TVMScript buffer annotations are TVM's DSL, not Python types
    @T.prim_func(s_tir=True)
    def vnni_impl(a: T.Buffer((4,), "uint8", offset_factor=1), b: T.Buffer((16, 4), "int8", offset_factor=1),  # type: ignore[valid-type]
                  c: T.Buffer((16,), "int32", offset_factor=1)) -> None:  # type: ignore[valid-type]
        with T.sblock("root"):
            T.reads(c[0:16], a[0:4], b[0:16, 0:4])
            T.writes(c[0:16])
            a_i32 = T.reinterpret(a.vload([0], "uint8x4"), dtype="int32")
            a_x64 = T.reinterpret(T.broadcast(a_i32, 16), dtype="int8x64")
            c[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"), c.vload([0], dtype="int32x16"),
                a_x64, b.vload([0, 0], dtype="int8x64"), dtype="int32x16")

    TensorIntrin.register(VNNI_DOT, dot_product_16x4_u8i8i32_desc, vnni_impl)
