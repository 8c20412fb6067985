"""CPU recurrences (blocks with a scan/ordered iterator, left serial by TVM): split the ordered loop and
unroll the inner part, so consecutive steps share loads and the loop overhead is paid once per chunk.
Lanes outside the recurrence are parallelised by the algorithm rewrite alg.scan_lanes, not here."""
from __future__ import annotations

from leka.ir import CandidateIR

from ..context import RuleContext
from ..cpu_plan import divisors_near

NAME = "cpu.scan_unroll"


def apply(ctx: RuleContext) -> list[CandidateIR] | None:
    if ctx.family != "cpu":
        return None
    scans = [b for b in ctx.infos if b.is_ordered and "O" in b.kinds and len(b.kinds) == len(b.loops)]
    if not scans:
        return None
    out = []
    for unroll in (4, 8):
        def build(sk, unroll=unroll):
            for b in scans:
                loop = sk.loops(b.name)[b.kinds.index("O")]
                if unroll not in divisors_near(sk.extent(loop), [unroll]):
                    continue
                inner = sk.do("split", loop=loop, factors=[None, unroll])[1]
                sk.do("unroll", loop=inner)
        ir = ctx.attempt(NAME, {"unroll": unroll}, build)
        if ir is not None:
            out.append(ir)
    return out or None
