"""Chat templates a GGUF may lack, and the copy of a GGUF with one added (package ``gguf``).

llama.cpp formats a chat with the GGUF's ``tokenizer.chat_template``. Without one, llama-cpp-python's
``--chat_format gemma`` drops the system message, which holds the agent's instructions; so a copy of the
file with the template written into its metadata is served instead (once, cached beside the models).

"gemma" is the official Gemma 3 template (google/gemma-3-*-it tokenizer_config.json) with two additions,
because Gemma 3 has no tool role: a tool result is rendered as a user turn (consecutive results share one
turn) and an assistant turn's tool calls as their JSON, so the tool loop's conversations render instead of
failing the template's role-alternation check. "chatml" is the <|im_start|> format (Qwen, many others).
"""
from __future__ import annotations

from pathlib import Path

from leka.llm.errors import LLMConfigError

GEMMA3 = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- set after_tool = not loop.first and loop_messages[loop.index0 - 1]['role'] == 'tool' -%}
    {%- set before_tool = not loop.last and loop_messages[loop.index0 + 1]['role'] == 'tool' -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- elif (message['role'] == 'tool') -%}
        {%- set role = "user" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {%- if not (message['role'] == 'tool' and after_tool) -%}
        {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else "") }}
    {%- endif -%}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is none -%}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {%- for call in message.get('tool_calls') or [] -%}
        {{ '\\n' + {'name': call['function']['name'], 'arguments': call['function']['arguments']} | tojson }}
    {%- endfor -%}
    {%- if message['role'] == 'tool' and before_tool -%}
        {{ '\\n' }}
    {%- else -%}
        {{ '<end_of_turn>\\n' }}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{ '<start_of_turn>model\\n' }}
{%- endif -%}
"""

CHATML = """{%- for message in messages -%}
    {{ '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') }}
    {%- for call in message.get('tool_calls') or [] -%}
        {{ '\\n' + {'name': call['function']['name'], 'arguments': call['function']['arguments']} | tojson }}
    {%- endfor -%}
    {{ '<|im_end|>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{ '<|im_start|>assistant\\n' }}
{%- endif -%}
"""

TEMPLATES = {"gemma": GEMMA3, "chatml": CHATML}
CHAT_TEMPLATE_KEY = "tokenizer.chat_template"


def template_text(choice: str) -> str:
    """A named template ("gemma", "chatml") or the text of a Jinja file."""
    if choice in TEMPLATES:
        return TEMPLATES[choice]
    path = Path(choice).expanduser()
    if not path.is_file():
        raise LLMConfigError(f"--chat-template {choice!r}: expected {', '.join(TEMPLATES)} or a Jinja file")
    return path.read_text(encoding="utf-8")


def chat_template_of(gguf_path: Path) -> str | None:
    """The chat template a GGUF carries, or None."""
    import gguf

    field = gguf.GGUFReader(gguf_path, "r").get_field(CHAT_TEMPLATE_KEY)
    return field.contents() if field is not None else None


def add_chat_template(source: Path, target: Path, template: str) -> None:
    """Write a copy of `source` at `target` whose chat template is `template` (replacing any it had); the
    tensors are copied as they are. Written beside the target and renamed, so a reader never sees half a file."""
    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    reader = gguf.GGUFReader(source, "r")
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE)
    partial = target.with_name(target.name + ".partial")
    writer = gguf.GGUFWriter(partial, arch=arch.contents() if arch else "llama", endianess=reader.endianess)
    alignment = reader.get_field(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = alignment.contents()
    new = {CHAT_TEMPLATE_KEY: MetadataDetails(gguf.GGUFValueType.STRING, template)}
    copy_with_new_metadata(reader, writer, new, [])
    partial.replace(target)
