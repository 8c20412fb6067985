"""What the generation baselines share: options, the model client (charged to the attempt's budget,
through the same response cache as LEKA's proposer), the attempt journal and the final Sample."""
from __future__ import annotations

import ast
import json
import re
from contextlib import contextmanager
from typing import Any, Iterator

from leka.llm.errors import one_line
from leka.methods import MethodContext, Sample
from leka.methods.base import no_candidate_result
from leka.methods.options import ATTEMPT_BUDGET, check_options

# Options every generation baseline takes.
COMMON_OPTIONS = ("llm", "base_url", ATTEMPT_BUDGET, "baseline", "max_tokens", "prompt")
_FENCE = re.compile(r"```(?:python)?\s*\n(.*?)```", re.S)


def setup(name: str, options: dict[str, Any], extra: tuple[str, ...] = ()) -> dict[str, Any]:
    check_options(name, options, (*COMMON_OPTIONS, *extra))
    return dict(options)


def make_llm(options: dict[str, Any], budget: Any) -> Any:
    """The model client, or None for the offline proposer (no --llm)."""
    spec = options.get("llm")
    if not spec or spec in ("offline", "leka-offline-rules"):
        return None
    from leka.agent.trace import leka_home
    from leka.llm import make_client

    return make_client(str(spec), base_url=options.get("base_url"), cache=leka_home() / "llm_cache.sqlite",
                       budget=budget)


def proposer_name(client: Any) -> str:
    from leka.proposers import OFFLINE_NAME

    if client is None:
        return OFFLINE_NAME
    return client.spec if getattr(client, "is_llm", True) else f"{client.spec} (replayed, not an LLM)"


def evaluate_fn(ctx: MethodContext, task: Any, options: dict[str, Any], *, holdout: bool = False):
    """(source, measure) -> EvalResult JSON. holdout=True for a final answer (judged on the held-back input
    families as well, as LEKA's finalize is); never for feedback a loop acts on."""
    baseline = options.get("baseline", "tvm-naive")

    def evaluate(source: str, measure: bool) -> dict[str, Any]:
        return ctx.evaluator.evaluate(task, source, baseline=baseline, measure=measure, holdout=holdout).to_json()
    return evaluate


PROGRAM_SCHEMA = {"name": "kernel", "schema": {"type": "object", "required": ["kernel"],
                                                "properties": {"kernel": {"type": "string"}}}}


def extract_program(text: str) -> str:
    """The TVMScript of a model's reply: {"kernel": "..."} (the structured envelope), a ```python fence, or
    the whole reply. ValueError (it goes back to the model once, see LLMClient.complete_parsed) unless it
    is Python with a decorated @T.prim_func function: a reply that merely mentions prim_func is no program.
    Only the syntax is read (ast, bounded); nothing is executed here."""
    from leka.evaluator.script_limits import ScriptRejected, parse_python

    body = _envelope(text)
    if body is None:
        m = _FENCE.search(text)
        body = (m.group(1) if m else text).strip()
    try:
        tree = parse_python(body)
    except ScriptRejected as e:
        raise ValueError(f"the kernel is not valid Python ({one_line(str(e), 200)}): answer with the whole "
                         "kernel, @T.prim_func def main(...): ...") from None
    if not any(isinstance(n, ast.FunctionDef) and any("prim_func" in ast.unparse(d) for d in n.decorator_list)
               for n in tree.body):
        raise ValueError("the reply holds no @T.prim_func function: answer with the whole kernel "
                         "(@T.prim_func def main(...): ...)")
    return body + "\n"


def _envelope(text: str) -> str | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data["kernel"].strip() if isinstance(data, dict) and isinstance(data.get("kernel"), str) else None


def no_candidate_sample(task: Any, target: Any, options: dict[str, Any], method: str, proposer: str, budget: Any,
                        why: str, meta: dict[str, Any] | None = None) -> Sample:
    """The final answer of an attempt whose model made no kernel (methods.base.NO_CANDIDATE)."""
    result = no_candidate_result(task, target, options.get("baseline", "tvm-naive"), why)
    return as_sample(result, method, proposer, budget, meta)


# What one attempt may write to the journal in all. A model's replies are input: a codeloop reply writing
# 4 x 2 MB files on each of 100 tool calls grew the store by 822 MB in 32 s when every call journaled every file.
JOURNAL_CAP_BYTES = 64 << 20


class AttemptJournal:
    """get/put of one attempt's journal entries (leka.agent.trace's agent_journal table). An entry's files are
    stored by content (`blob:<sha256>` entries, each written once; the entry keeps the digests), and the
    attempt's journal stops growing at `cap` bytes: later calls are not journaled (a resumed attempt redoes
    them) and the entry `journal_full` says from which call on."""

    def __init__(self, store: Any, run_id: str, cap: int = JOURNAL_CAP_BYTES) -> None:
        self.store, self.run_id, self.cap = store, run_id, cap
        self.written = 0
        self._blobs = {k[5:] for k in store.journal_keys(run_id) if k.startswith("blob:")}

    def get(self, key: str) -> Any | None:
        value = self.store.journal_get(self.run_id, key)
        if isinstance(value, dict) and isinstance(value.get("file_digests"), dict):
            files = {p: self.store.journal_get(self.run_id, f"blob:{h}") for p, h in value["file_digests"].items()}
            if any(not isinstance(text, str) for text in files.values()):
                return None  # a blob is missing: the call is redone
            value = {**{k: v for k, v in value.items() if k != "file_digests"}, "files": files}
        return value

    def put(self, key: str, value: Any) -> None:
        import hashlib
        import json

        if self.written > self.cap:
            return
        if isinstance(value, dict) and isinstance(value.get("files"), dict):
            digests, new = {}, {}
            for path, text in value["files"].items():
                digests[path] = h = hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()
                if h not in self._blobs:
                    new[h] = str(text)
            value = {**{k: v for k, v in value.items() if k != "files"}, "file_digests": digests}
        else:
            new = {}
        size = sum(len(t) for t in new.values()) + len(json.dumps(value, default=str))
        if self.written + size > self.cap:
            self.written = self.cap + 1
            self.store.journal_put(self.run_id, "journal_full", {"from": key, "cap_bytes": self.cap})
            return
        for h, text in new.items():
            self.store.journal_put(self.run_id, f"blob:{h}", text)
            self._blobs.add(h)
        self.store.journal_put(self.run_id, key, value)
        self.written += size


@contextmanager
def attempt_journal(method: str, ctx: MethodContext, task: Any) -> Iterator[AttemptJournal]:
    from leka.agent.trace import TraceStore

    store = TraceStore()
    try:
        yield AttemptJournal(store, f"{method}:{ctx.run_id}.{task.id}.{ctx.sample_idx}")
    finally:
        store.close()


def as_sample(result: dict[str, Any], method: str, proposer: str, budget: Any,
              meta: dict[str, Any] | None = None) -> Sample:
    rec = {k: v for k, v in result.items() if k not in ("source", "measured")}
    return Sample(result=rec, method=method, candidate_hash=rec.get("candidate_hash"), proposer=proposer,
                  budget_spent=budget.spent() if budget is not None else {}, meta=dict(meta or {}),
                  source=result.get("source"))
