"""`leka llm serve|status|stop`: the local model server (leka.llm.local), and ``llm_scope``, which gives
every command run with ``--llm local:MODEL`` (or ``--option llm=local:MODEL``) a server for its duration."""
from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator


def register(sub) -> None:
    p = sub.add_parser("llm", help="a local model server (llama.cpp) for --llm local:MODEL",
                       description="Start, list and stop local model servers: llama.cpp's OpenAI-compatible server "
                                   "on 127.0.0.1 (the local-llm extra: make local-llm). See docs/llm.md.")
    verbs = p.add_subparsers(dest="llm_command", metavar="VERB")
    q = verbs.add_parser("serve", help="start a server and wait until it answers")
    q.add_argument("--model", default="gemma3-270m", help="gemma3-270m (default) or PATH.gguf")
    q.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one)")
    q.add_argument("--threads", type=int, default=1, help="CPU threads (default 1)")
    q.add_argument("--ctx", type=int, help="context size in tokens (default 8192)")
    q.add_argument("--chat-template", metavar="gemma|chatml|FILE",
                   help="add this chat template to a copy of the GGUF (gemma3-270m gets gemma's by default)")
    q.add_argument("--json", action="store_true", help="print the server's state as JSON")
    q.set_defaults(func=cmd_serve)
    q = verbs.add_parser("status", help="the running servers: URL, model, pid, memory, speed, log")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_status)
    q = verbs.add_parser("stop", help="stop the running servers (or the one on --port)")
    q.add_argument("--port", type=int)
    q.add_argument("--json", action="store_true", help="print the servers stopped as JSON")
    q.set_defaults(func=cmd_stop)

    def no_verb(args) -> int:
        p.print_help()
        return 2
    p.set_defaults(func=no_verb)


def _speed_text(state: Any) -> str:
    s = state.speed or {}
    if not s:
        return "speed not measured"
    return f"prompt {s['prompt_tokens_per_s']:g} tok/s, generation {s['generation_tokens_per_s']:g} tok/s"


def cmd_serve(args) -> int:
    from leka.llm.local import find_server, parse_model, start_server
    from leka.llm.local.models import lacks_template
    from leka.llm.local.server import DEFAULT_CTX

    model = parse_model(args.model, args.chat_template)
    state = find_server(model.key)
    if state is None:
        if model.template is None and lacks_template(Path(model.key)):
            print(f"leka llm: {args.model} has no chat template; llama.cpp falls back to a generic format "
                  f"(add one with --chat-template gemma|chatml|FILE)", file=sys.stderr)
        state = start_server(model, port=args.port, threads=args.threads, ctx=args.ctx or DEFAULT_CTX)
        note = f"started in {state.startup_s:g} s"
    else:
        note = "already running"
    if args.json:
        print(json.dumps({**state.__dict__, "base_url": state.base_url}, indent=2))
        return 0
    print(f"{state.base_url} {state.name}")
    print(f"leka llm: {state.name} at {state.base_url} (pid {state.pid}, {note}; {_speed_text(state)}); "
          f"log {state.log}; use --llm local:{args.model}", file=sys.stderr)
    return 0


def _rss_mb(state: Any) -> float | None:
    proc = state.process()
    try:
        return proc.memory_info().rss / 2**20 if proc is not None else None
    except Exception:  # psutil.Error: it went away meanwhile
        return None


def cmd_status(args) -> int:
    from leka.llm.local import running_servers

    servers = running_servers()
    if args.json:
        print(json.dumps([{**s.__dict__, "base_url": s.base_url, "rss_mb": _rss_mb(s)} for s in servers], indent=2))
        return 0
    if not servers:
        print("no local model server is running (start one: leka llm serve)")
        return 0
    for s in servers:
        rss = _rss_mb(s)
        print(f"{s.name}  {s.base_url}  pid {s.pid}  ({s.owner}, up {time.time() - s.started_at:.0f} s, "
              f"threads {s.threads}, ctx {s.ctx}, RSS {'?' if rss is None else f'{rss:.0f}'} MB)  {_speed_text(s)}")
        print(f"  model {s.gguf}\n  log {s.log}")
    return 0


def cmd_stop(args) -> int:
    from leka.llm.local import running_servers, stop_server

    servers = [s for s in running_servers() if args.port is None or s.port == args.port]
    if not servers and not args.json:
        print("no local model server is running" + (f" on port {args.port}" if args.port else ""))
        return 0
    for s in servers:
        stop_server(s)
        if not args.json:
            print(f"stopped {s.name} at {s.base_url} (pid {s.pid})")
    if args.json:
        print(json.dumps([{"name": s.name, "base_url": s.base_url, "pid": s.pid} for s in servers], indent=2))
    return 0


def _local_specs(args) -> list[str]:
    """The `local:` models a command's arguments name (--llm, or bench run's --option llm=...)."""
    specs = [getattr(args, "llm", None)] + [o[len("llm="):] for o in getattr(args, "option", None) or []
                                            if isinstance(o, str) and o.startswith("llm=")]
    return sorted({s.strip()[len("local:"):] for s in specs if isinstance(s, str) and s.strip().startswith("local:")})


@contextmanager
def llm_scope(args) -> Iterator[None]:
    """Run a command with a server for each `local:` model it names: a running one, else one started for
    the command (announced on stderr) and stopped when it ends."""
    models = _local_specs(args)
    if not models:
        yield
        return
    from leka.llm.errors import LLMConfigError
    from leka.llm.local import find_server, local_server, parse_model

    if getattr(args, "base_url", None):
        raise LLMConfigError("--llm local:MODEL runs its own server: drop --base-url (or use compat:)")
    with ExitStack() as stack:
        for model in models:
            running = find_server(parse_model(model).key)
            state = stack.enter_context(local_server(model))
            if running is None:
                print(f"leka: started a local model server for this command: {state.name} at {state.base_url} "
                      f"in {state.startup_s:g} s ({_speed_text(state)}; log {state.log})", file=sys.stderr, flush=True)
        yield
