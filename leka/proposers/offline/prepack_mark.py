"""Marking a rule's weight-packing block so the model build packs the weight once (leka/optimize/prepack.py)."""
from __future__ import annotations

from leka.ir.steps import PREPROC_KEY

from .sketch import Sketch


def mark_weight_prepack(sk: Sketch, block: str) -> bool:
    """Annotate `block` as a layout rewrite of a weight when TVM's SplitLayoutRewritePreproc can split it out:
    its loops directly under the root (not under a loop it shares with compute), one read, of a parameter,
    one write. False (nothing recorded) otherwise: the kernel then packs per call, as before."""
    if block not in sk.live.block_names():
        return False  # inlined, or nested in another block
    sch = sk.live.sch
    rv = sk.live.block(block)
    blk = sch.get(rv)
    params = list(sch.mod["main"].params)  # buffers themselves in TVM 0.27
    if len(blk.reads) != 1 or len(blk.writes) != 1 or blk.alloc_buffers or blk.match_buffers:
        return False
    if not any(blk.reads[0].source.same_as(b) for b in params):
        return False  # an intermediate of the kernel (a transpose, a dequantisation): not a constant
    loops = sch.get_loops(rv)
    top = sch.get_sref(loops[0]) if loops else sch.get_sref(rv)
    if top.parent is None or not top.parent.same_as(sch.get_sref(sch.get_sblock("root"))):
        return False
    sk.do("annotate", target=block, key=PREPROC_KEY, value=1)
    return True
