"""A local model server the project starts: llama.cpp's OpenAI-compatible server (llama-cpp-python) on
127.0.0.1, for ``--llm local:gemma3-270m`` or ``--llm local:PATH.gguf`` (see docs/llm.md).

- models: what a `local:` spec names, the GGUF served (a copy with a chat template added when needed);
- templates: the chat templates and the GGUF copy that carries one;
- server: start / find / stop, the state files, the command-scoped server (``local_server``);
- speed: the speed probe run at start and ``local_limits`` (max_tokens and seconds per call);
- client: LocalClient, the compat client over a local server (streamed, so a dropped call stops generating).
"""
from leka.llm.local.models import GEMMA, INSTALL_HINT, LocalModel, parse_model
from leka.llm.local.server import (LocalServerError, ServerState, find_server, local_server, running_servers,
                                   start_server, stop_server)
from leka.llm.local.speed import local_limits

__all__ = ["GEMMA", "INSTALL_HINT", "LocalModel", "parse_model", "LocalServerError", "ServerState", "find_server",
           "local_server", "running_servers", "start_server", "stop_server", "local_limits"]
