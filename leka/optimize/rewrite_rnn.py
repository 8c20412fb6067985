"""LSTM, GRU and RNN nodes unrolled over their pinned sequence length into standard ONNX operators.

TVM's Relax ONNX frontend has no recurrent operators, so before the import (importer.to_relax) each one is
rewritten, ONNX to ONNX: one MatMul + Add for the input projection (with every bias that is a constant of a
pre-activation) of every time step at once, one Split of it into the steps (GRU: two such pieces), then per
step the recurrent MatMul(s) and the gate arithmetic, laid out so that TVM's FuseOps makes few kernels a step.
FuseOps fuses a MatMul with the elementwise/broadcast ops after it, not with a Slice (injective) after it; a
Slice that a MatMul reads is a kernel of its own, and so was the Slice of GRU's h-gate input that
the Add after its second MatMul read. So a step's gate Slices sit in the elementwise group after the MatMul
group, and a MatMul reads a whole tensor. Kernel calls a step after fusion (each step's kernels the same
PrimFuncs, tuned once):
  LSTM  3: MatMul(h, R^T); the gate Slices, activations and new c; new h (c
        leaves the group, so FuseOps ends one there). Carrying one state [h | c] read by MatMul against R^T
        over zero rows makes it 2 calls, but the recurrent MatMul does twice the work and measured slower
        end to end on kws-lstm (experiments/results/rnn_fusion_2026-12-05), so it is not used.
  GRU   3 with linear_before_reset=0: MatMul(h, R_zr), then the z/r Slices with r*h, then MatMul(r*h, R_h) +
        the h gate's input piece, g and the update h' = hh + z (h - hh) (z by a Slice fused into it); the
        projection is cut into [z r] and [h] pieces (one MatMul + Split each), so no input Slice is a kernel
        of its own (it was the 4th). One MatMul per gate, also 3 calls, measured slower on kws-gru.
        2 with linear_before_reset=1: one MatMul of h with every gate's R + [0 0 Rb_h], then the gates
  RNN   1: MatMul + the projected row + the activation
It follows the ONNX operator spec: gate orders iofc (LSTM), zrh (GRU), default activations, forward /
reverse / bidirectional, optional B, initial_h, initial_c, P (peepholes), clip, GRU's linear_before_reset,
layout 0 and 1. The weights must be constants (initializers or Constant nodes); sequence_lens, when given,
must be a constant equal to the sequence length for every batch entry; input_forget=1 is refused. Refusals
are one-line OptimizeErrors naming the node.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import OptimizeError
from .rnn_kernel import DOMAIN, OP_TYPE, fused_why_not

RNN_OPS = ("LSTM", "GRU", "RNN")
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
DEFAULT_ACTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}
# activation name -> (ONNX op, attribute names taken from activation_alpha / activation_beta)
ACTIVATIONS = {"Sigmoid": ("Sigmoid", ()), "Tanh": ("Tanh", ()), "Relu": ("Relu", ()),
               "LeakyRelu": ("LeakyRelu", ("alpha",)), "HardSigmoid": ("HardSigmoid", ("alpha", "beta")),
               "Elu": ("Elu", ("alpha",)), "Softsign": ("Softsign", ()), "Softplus": ("Softplus", ()),
               "ThresholdedRelu": ("ThresholdedRelu", ("alpha",))}


def has_rnn(model: Any) -> bool:
    return any(n.op_type in RNN_OPS and n.domain in ("", "ai.onnx") for n in model.graph.node)


def expand_rnns(model: Any, shapes: dict[str, list[int]], fused: bool = False) -> Any:
    """A copy of `model` with every LSTM/GRU/RNN node replaced by its unrolled equivalent (`model` itself
    when it has none). `shapes`: the pinned input shapes, for the sequence length and batch. `fused` (CPU
    targets): each direction that rnn_kernel can run whole becomes its input projection and one
    LekaRecurrence node instead (importer.to_relax gives TVM's frontend the converter for it)."""
    import onnx
    from onnx import numpy_helper

    if not has_rnn(model):
        return model
    from .importer import _with_input_shapes

    g = onnx.shape_inference.infer_shapes(_with_input_shapes(model, shapes)).graph
    dims = {vi.name: [d.dim_value if d.HasField("dim_value") else 0 for d in vi.type.tensor_type.shape.dim]
            for vi in [*g.input, *g.value_info, *g.output]}
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    used = {i for n in model.graph.node for i in n.input} | {o.name for o in model.graph.output}
    nodes, inits = [], []
    for k, node in enumerate(model.graph.node):
        if node.op_type in RNN_OPS and node.domain in ("", "ai.onnx"):
            b = _Builder(node, k, consts, dims, opset, used, fused)
            b.expand()
            nodes += b.nodes
            inits += b.inits
        else:
            nodes.append(node)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    out.graph.initializer.extend(inits)
    if any(n.domain == DOMAIN for n in nodes):
        out.opset_import.append(onnx.helper.make_opsetid(DOMAIN, 1))
    return out


class _Builder:
    """The replacement nodes and initializers of one recurrent node."""

    def __init__(self, node: Any, index: int, consts: dict, dims: dict, opset: int, used: set[str],
                 fused: bool = False) -> None:
        from onnx import helper

        self.fused = fused
        self.used = used  # names some node or graph output reads: outputs nobody reads are not built
        self.node, self.op, self.consts, self.opset = node, node.op_type, consts, opset
        self.prefix = f"{node.name or node.op_type.lower() + str(index)}/unrolled"
        self.attrs: dict[str, Any] = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0
        self._ints: dict[tuple, str] = {}
        self.x_dims = dims.get(node.input[0], [])

    # -- small emitters --------------------------------------------------------------------------------
    def fail(self, why: str) -> OptimizeError:
        return OptimizeError(f"cannot unroll {self.op} node {self.node.name or '<unnamed>'!r} "
                             f"(output {self.node.output[0] if self.node.output else '?'}): {why}")

    def name(self, tag: str) -> str:
        self._n += 1
        return f"{self.prefix}/{tag}_{self._n}"

    def const(self, value: np.ndarray, tag: str = "c") -> str:
        from onnx import numpy_helper

        key = (value.dtype.str, value.shape, value.tobytes()) if value.dtype == np.int64 else None
        if key in self._ints:  # slice bounds and shapes repeat across steps: one initializer each
            return self._ints[key]
        n = self.name(tag)
        if key is not None:
            self._ints[key] = n
        self.inits.append(numpy_helper.from_array(np.array(value), n))  # np.array: ascontiguousarray makes 0-d 1-d
        return n

    def emit(self, op: str, inputs: list[str], n_out: int = 1, out: list[str] | None = None, **attrs) -> Any:
        from onnx import helper

        outs = out or [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.name(op), **attrs))
        return outs[0] if len(outs) == 1 else outs

    def input(self, i: int) -> str:
        return self.node.input[i] if len(self.node.input) > i and self.node.input[i] else ""

    def weight(self, i: int, what: str) -> np.ndarray | None:
        name = self.input(i)
        if not name:
            return None
        return self._constant(name, what)

    def required_weight(self, i: int, what: str) -> np.ndarray:
        name = self.input(i)
        if not name:
            raise self.fail(f"its {what} input is missing (the ONNX spec requires it)")
        return self._constant(name, what)

    def _constant(self, name: str, what: str) -> np.ndarray:
        if name not in self.consts:
            raise self.fail(f"its {what} ({name}) must be a constant (an initializer or Constant node)")
        return np.asarray(self.consts[name])

    # -- the expansion ---------------------------------------------------------------------------------
    def expand(self) -> None:
        a = self.attrs
        direction = a.get("direction", b"forward")
        direction = direction.decode() if isinstance(direction, bytes) else direction
        if direction not in ("forward", "reverse", "bidirectional"):
            raise self.fail(f"unknown direction {direction!r}")
        if a.get("input_forget", 0):
            raise self.fail("input_forget=1 is not supported")
        layout = a.get("layout", 0)
        if len(self.x_dims) != 3 or not all(self.x_dims):
            raise self.fail(f"input {self.node.input[0]} needs a static 3-d shape (pin the model's inputs "
                            f"with --shape)")
        seq, batch = (self.x_dims[0], self.x_dims[1]) if layout == 0 else (self.x_dims[1], self.x_dims[0])
        self.seq, self.batch = seq, batch
        w, r = self.required_weight(1, "W"), self.required_weight(2, "R")
        given = a.get("hidden_size")
        self.hidden = int(given) if given is not None else int(r.shape[-1])
        self.dtype = w.dtype
        self._check_seq_lens()
        self.acts = self._activations(2 if direction == "bidirectional" else 1)
        x = self.node.input[0]
        if layout:
            x = self.emit("Transpose", [x], perm=[1, 0, 2])
        dirs = ["forward", "reverse"] if direction == "bidirectional" else [direction]
        results = [self._direction(d, rev == "reverse", x, w, r) for d, rev in enumerate(dirs)]
        self._outputs(results, layout)

    def _check_seq_lens(self) -> None:
        lens = self.weight(4, "sequence_lens")
        if lens is not None and not np.all(lens == self.seq):
            raise self.fail(f"sequence_lens {lens.tolist()} differ from the sequence length {self.seq}; "
                            "only full-length sequences are supported")

    def _activations(self, n_dirs: int) -> list[list[tuple[str, dict]]]:
        per = len(DEFAULT_ACTS[self.op])
        names = [s.decode() if isinstance(s, bytes) else s for s in self.attrs.get("activations", [])]
        names = names or DEFAULT_ACTS[self.op] * n_dirs
        alphas, betas = list(self.attrs.get("activation_alpha", [])), list(self.attrs.get("activation_beta", []))
        acts = []
        for nm in names:
            if nm not in ACTIVATIONS:
                raise self.fail(f"activation {nm!r} is not supported (supported: {', '.join(ACTIVATIONS)})")
            op, keys = ACTIVATIONS[nm]
            kw = {}
            for key in keys:  # activation_alpha/beta list the values of the activations that take them, in order
                src = alphas if key == "alpha" else betas
                if src:
                    kw[key] = float(src.pop(0))
            acts.append((op, kw))
        if len(acts) != per * n_dirs:
            raise self.fail(f"{len(acts)} activations given, {per * n_dirs} expected")
        return [acts[d * per:(d + 1) * per] for d in range(n_dirs)]

    def act(self, x: str, spec: tuple[str, dict], clipped: bool = True) -> str:
        """spec's activation of x; with the clip attribute, gate inputs are clipped first (ONNX Runtime does
        not clip the cell state before LSTM's output activation h)."""
        clip = self.attrs.get("clip")
        if clip is not None and clipped:
            x = self.emit("Clip", [x, self.const(np.array(-clip, self.dtype)), self.const(np.array(clip, self.dtype))])
        return self.emit(spec[0], [x], **spec[1])

    def _initial(self, i: int, d: int) -> str:
        """Direction d's initial state ([batch, hidden]) from input i, zeros when absent."""
        name = self.input(i)
        if not name:
            return self.const(np.zeros((self.batch, self.hidden), self.dtype), "zeros")
        if self.attrs.get("layout", 0):  # [batch, dirs, hidden] -> [dirs, batch, hidden]
            name = self.emit("Transpose", [name], perm=[1, 0, 2])
        return self.emit("Gather", [name, self.const(np.array(d, np.int64))], axis=0)

    def _direction(self, d: int, reverse: bool, x: str, w: np.ndarray, r: np.ndarray) -> tuple[Any, tuple]:
        """(a function emitting Y of direction d, [seq, 1, batch, hidden] in time order, its last state); a
        state is (h, c), c "" but for LSTM."""
        hs, g = self.hidden, GATES[self.op]
        b = self.weight(3, "B")
        b = np.zeros((g * 2 * hs,), self.dtype) if b is None else b[d]
        wb, rb = b[:g * hs], b[g * hs:]
        bias = wb + rb
        if self.op == "GRU" and self.attrs.get("linear_before_reset", 0):  # r multiplies h's recurrent bias
            bias = np.concatenate([wb[:2 * hs] + rb[:2 * hs], wb[2 * hs:]])
        parts = [2 * hs] if self.op == "GRU" and not self.attrs.get("linear_before_reset", 0) else []
        if self.fused and not self._fused_why_not(d):
            return self._fused(d, reverse, x, w[d], r[d].T, bias, rb)
        steps = self._projection(x, w[d], bias, parts)
        step = {"LSTM": self._lstm_step, "GRU": self._gru_step, "RNN": self._rnn_step}[self.op]
        consts = self._step_consts(d, r[d].T, rb)
        state = self._initial_state(d)
        states: list[tuple[str, str]] = []
        for t in (range(self.seq - 1, -1, -1) if reverse else range(self.seq)):
            state = step(steps[t], state, consts, self.acts[d])
            states.append(state)
        states = states[::-1] if reverse else states
        shape = self.const(np.array([1, 1, self.batch, self.hidden], np.int64), "shape")

        def y4() -> str:  # [seq, 1, batch, hidden], built only when Y is read
            steps4 = [self.emit("Reshape", [h, shape]) for h, _c in states]
            return steps4[0] if len(steps4) == 1 else self.emit("Concat", steps4, axis=0)
        return y4, state

    def _fused_why_not(self, d: int) -> str:
        acts = [op for op, _kw in self.acts[d]]
        return fused_why_not(self.op, self.hidden, str(self.dtype), acts, self.attrs.get("clip"),
                             self.op == "LSTM" and self.weight(7, "P") is not None)

    def _fused(self, d: int, reverse: bool, x: str, w: np.ndarray, rt: np.ndarray, bias: np.ndarray,
               rb: np.ndarray) -> tuple[Any, tuple[str, str]]:
        """Direction d as rnn_kernel's one kernel: the projection [seq, batch, G*hidden] (one MatMul + Add)
        and a LekaRecurrence node (Y, last h, last c)."""
        hs = self.hidden
        x2 = self.emit("Reshape", [x, self.const(np.array([self.seq * self.batch, -1], np.int64), "shape")])
        xp = self.emit("Add", [self.emit("MatMul", [x2, self.const(np.ascontiguousarray(w.T), "W")]),
                               self.const(bias.astype(self.dtype), "B")])
        xp = self.emit("Reshape", [xp, self.const(np.array([self.seq, self.batch, -1], np.int64), "shape")])
        lbr = int(self.op == "GRU" and self.attrs.get("linear_before_reset", 0))
        rb_h = rb[2 * hs:] if lbr else np.zeros(hs, self.dtype)
        zeros = self.const(np.zeros((self.batch, hs), self.dtype), "zeros")
        h0, c0 = self._initial(5, d), self._initial(6, d) if self.op == "LSTM" else zeros
        y, hn, cn = self.emit(OP_TYPE, [xp, self.const(np.ascontiguousarray(rt), "R"), self.const(rb_h, "B"), h0, c0],
                              n_out=3, domain=DOMAIN, cell=self.op, hidden=hs, reverse=int(reverse), lbr=lbr,
                              act=self.acts[d][0][0] if self.op == "RNN" else "")
        shape = self.const(np.array([self.seq, 1, self.batch, hs], np.int64), "shape")
        return (lambda: self.emit("Reshape", [y, shape])), (hn, cn if self.op == "LSTM" else "")

    def _initial_state(self, d: int) -> tuple[str, str]:
        return self._initial(5, d), self._initial(6, d) if self.op == "LSTM" else ""

    def _step_consts(self, d: int, rt: np.ndarray, rb: np.ndarray) -> dict[str, Any]:
        """The recurrent weights as the steps use them. LSTM: R^T over zero rows ([2*hidden, 4*hidden]), so
        the state [h | c] itself is the MatMul's input (a Slice before a MatMul would be a kernel of its
        own). GRU with linear_before_reset=0: R^T of gates z, r and of gate h; with 1: R^T of every gate
        and the recurrent bias of gate h alone (r multiplies it)."""
        hs = self.hidden
        if self.op == "LSTM":
            out = {"R": self.const(rt, "R")}
            p = self.weight(7, "P")
            if p is not None:
                out.update({k: self.const(p[d, j * hs:(j + 1) * hs], "P") for j, k in enumerate("iof")})
            return out
        if self.op == "RNN":
            return {"R": self.const(rt, "R")}
        if self.attrs.get("linear_before_reset", 0):
            rbh = np.concatenate([np.zeros(2 * hs, self.dtype), rb[2 * hs:]]).astype(self.dtype)
            return {"R": self.const(rt, "R"), "Rb": self.const(rbh, "B"), "lbr": 1}
        return {"R_zr": self.const(rt[:, :2 * hs], "R"), "R_h": self.const(rt[:, 2 * hs:], "R"), "lbr": 0}

    def _projection(self, x: str, w: np.ndarray, bias: np.ndarray, parts: list[int]) -> list[list[str]]:
        """Every step's input projection (with the biases) at once: per piece of the gate rows (`parts`: the
        row indices to cut w at; [] for one piece) one MatMul + Add [seq*batch, width] and one Split into
        the steps (one kernel call; a Slice at offset t*batch would make each step's kernel distinct). A
        piece read by the recurrent MatMul's group must not be a Slice (that Slice stays a kernel)."""
        n = self.seq * self.batch
        x2 = self.emit("Reshape", [x, self.const(np.array([n, -1], np.int64), "shape")])
        per = []
        for wj, bj in zip(np.split(w, parts), np.split(bias, parts)):
            xw = self.emit("Add", [self.emit("MatMul", [x2, self.const(wj.T, "W")]),
                                   self.const(bj.astype(self.dtype), "B")])
            attrs = {"num_outputs": self.seq} if self.opset >= 18 else {}
            per.append(self.emit("Split", [xw], n_out=self.seq, axis=0, **attrs) if self.seq > 1 else [xw])
        return [[pieces[t] for pieces in per] for t in range(self.seq)]

    def slice(self, x: str, col0: int, col1: int) -> str:
        """x[:, col0:col1] of a 2-d x. Slices rather than Split: TVM fuses these injective reads into the
        elementwise kernel that consumes them (a Split's tuple is a kernel of its own)."""
        starts, ends, axes = [col0], [col1], [1]
        if self.opset < 10:
            return self.emit("Slice", [x], starts=starts, ends=ends, axes=axes)
        return self.emit("Slice", [x, *(self.const(np.array(v, np.int64), "i") for v in (starts, ends, axes))])

    def gate(self, x: str, j: int) -> str:
        return self.slice(x, j * self.hidden, (j + 1) * self.hidden)

    def _lstm_step(self, xt: list[str], state: tuple[str, str], k: dict, acts: list) -> tuple[str, str]:
        """Three kernels: MatMul(h, R^T); the gate Slices (of it and of the step's projected row),
        activations and new c; new h (c leaves the group for the next step, so FuseOps ends one there)."""
        f_act, g_act, h_act = acts
        h, c = state
        rec = self.emit("MatMul", [h, k["R"]])
        gi, go, gf, gc = (self.emit("Add", [self.gate(xt[0], j), self.gate(rec, j)]) for j in range(4))
        if "i" in k:  # peepholes on the previous cell (input, forget) and the new cell (output)
            gi = self.emit("Add", [gi, self.emit("Mul", [c, k["i"]])])
            gf = self.emit("Add", [gf, self.emit("Mul", [c, k["f"]])])
        i, f, cc = self.act(gi, f_act), self.act(gf, f_act), self.act(gc, g_act)
        c = self.emit("Add", [self.emit("Mul", [f, c]), self.emit("Mul", [i, cc])])
        if "o" in k:
            go = self.emit("Add", [go, self.emit("Mul", [c, k["o"]])])
        return self.emit("Mul", [self.act(go, f_act), self.act(c, h_act, clipped=False)]), c

    def _gru_step(self, xt: list[str], state: tuple[str, str], k: dict, acts: list) -> tuple[str, str]:
        """linear_before_reset=0, three kernels: h R_zr; the z, r Slices and r*h; (r*h) R_h + x_h, g and the
        update (xt: the [z r] and [h] pieces of the step's projection, biases included).
        linear_before_reset=1, two kernels: h R^T + [0 0 Rb_h], then the gate Slices and arithmetic."""
        f_act, g_act = acts
        h = state[0]
        if k["lbr"]:
            rec = self.emit("Add", [self.emit("MatMul", [h, k["R"]]), k["Rb"]])
            z = self.act(self.emit("Add", [self.gate(xt[0], 0), self.gate(rec, 0)]), f_act)
            r = self.act(self.emit("Add", [self.gate(xt[0], 1), self.gate(rec, 1)]), f_act)
            hh = self.act(self.emit("Add", [self.gate(xt[0], 2), self.emit("Mul", [r, self.gate(rec, 2)])]), g_act)
        else:
            zr = self.emit("MatMul", [h, k["R_zr"]])
            z, r = (self.act(self.emit("Add", [self.gate(xt[0], j), self.gate(zr, j)]), f_act) for j in range(2))
            hh = self.act(self.emit("Add", [xt[1], self.emit("MatMul", [self.emit("Mul", [r, h]), k["R_h"]])]),
                          g_act)
        # (1 - z) * hh + z * h  ==  hh + z * (h - hh)
        return self.emit("Add", [hh, self.emit("Mul", [z, self.emit("Sub", [h, hh])])]), ""

    def _rnn_step(self, xt: list[str], state: tuple[str, str], k: dict, acts: list) -> tuple[str, str]:
        """One kernel: MatMul, the projected input row and the activation."""
        return self.act(self.emit("Add", [xt[0], self.emit("MatMul", [state[0], k["R"]])]), acts[0]), ""

    def _outputs(self, results: list[tuple[Any, tuple]], layout: int) -> None:
        """Y [seq, dirs, batch, hidden], Y_h and Y_c [dirs, batch, hidden] (layout 1: batch first)."""
        outs = [o if o in self.used else "" for o in self.node.output] + [""] * 3
        shape1 = self.const(np.array([1, self.batch, self.hidden], np.int64), "shape")

        def stack(names: list[str], shape: str, out: str, perm: list[int]) -> None:
            parts = [self.emit("Reshape", [n, shape]) for n in names]
            whole = parts[0] if len(parts) == 1 else self.emit("Concat", parts, axis=0)
            if layout:
                self.emit("Transpose", [whole], out=[out], perm=perm)
            else:
                self.emit("Identity", [whole], out=[out])

        if outs[0]:
            per_dir = [y4() for y4, _ in results]
            y = per_dir[0] if len(per_dir) == 1 else self.emit("Concat", per_dir, axis=1)
            perm: dict[str, Any] = {"perm": [2, 0, 1, 3]} if layout else {}
            self.emit("Transpose" if layout else "Identity", [y], out=[outs[0]], **perm)
        if outs[1]:
            stack([last[0] for _, last in results], shape1, outs[1], [1, 0, 2])
        if outs[2] and self.op == "LSTM":
            stack([last[1] for _, last in results], shape1, outs[2], [1, 0, 2])
