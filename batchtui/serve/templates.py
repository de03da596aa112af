"""Chats laid out as the models' chat templates lay them out, so that their tokens are counted
where vLLM counts them: on the text the template makes (special tokens included), by batchtui's
rule (`batchtui.serve.tokens`).

The layouts are those of the chat_template in each model's tokenizer_config.json on Hugging Face
(facts of the format, written here in Python):

- Llama 3.1 / 3.2 / 3.3 Instruct: the begin-of-text token; a system turn always (header
  `<|start_header_id|>system<|end_header_id|>` and two line breaks, "Cutting Knowledge Date:
  December 2023", "Today Date: 26 Jul 2024" (3.2 writes the day's date, as long), then the
  request's own system message trimmed, `<|eot_id|>`); each turn a header with its role, two line
  breaks, its content trimmed and `<|eot_id|>`; a tool's answer under the `ipython` role as JSON;
  an assistant's tool call as `{"name": ..., "parameters": ...}` (one per message); then the
  assistant's header the answer follows.
- Qwen2.5 Instruct: ChatML turns (`<|im_start|>role`, a line break, the content, `<|im_end|>` and
  a line break), a default system turn "You are Qwen, created by Alibaba Cloud. You are a helpful
  assistant." when the chat has none; tool answers as `<tool_response>` blocks in a user turn,
  tool calls as `<tool_call>` blocks; then `<|im_start|>assistant` and a line break.
- any other model: ChatML turns without a default system turn (said in the manual, docs/serve.md).

A content given as a list of parts is its text parts joined by line breaks (vLLM's "string"
content format); the `developer` role is read as `system` (vLLM does so for templates without
it). `continue_final_message` ends the layout at the last message's content (transformers'
rule), `add_generation_prompt` false leaves the assistant's header out.
"""

from __future__ import annotations

import json

from .tokens import PromptError

LLAMA3_DATE = "26 Jul 2024"
QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def render(template: str, messages, add_generation_prompt: bool = True,
           continue_final_message: bool = False, date_string: str | None = None) -> list[tuple[str, str]]:
    """The chat as the template lays it out, in parts (what identifies the part, its text): a part
    per message (the template's own text with it), and the generation prompt last. The parts end
    where tokens end (at a special token or a line break), so their tokens add up to the whole's.
    `date_string` is Llama 3's date line (chat_template_kwargs)."""
    chat = [_message(m) for m in _messages(messages)]
    if template == "llama3":
        parts = _llama3(chat, date_string or LLAMA3_DATE)
        head = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    elif template == "qwen2.5":
        parts = _qwen(chat)
        head = "<|im_start|>assistant\n"
    else:
        parts = [_chatml_turn(m) for m in chat]
        head = "<|im_start|>assistant\n"
    if continue_final_message:
        final = chat[-1]["content"].strip()
        identity, text = parts[-1]
        at = text.rfind(final) if final else -1
        if at < 0:
            raise PromptError("continue_final_message: the final message's content is not in the formatted chat")
        parts[-1] = (identity, text[:at + len(final)])
    elif add_generation_prompt:
        parts.append(("<generation prompt>", head))
    return parts


def _messages(messages) -> list:
    if not isinstance(messages, list) or not messages:
        raise PromptError("messages: a non-empty list of messages is required")
    return messages


def _message(m) -> dict:
    """A message as the templates read it: role, content as text, tool calls."""
    if not isinstance(m, dict) or not isinstance(m.get("role"), str):
        raise PromptError("messages: each message needs a role")
    role = "system" if m["role"] == "developer" else m["role"]
    calls = m.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise PromptError("messages: tool_calls must be a list")
    return {"role": role, "content": _text(m.get("content")), "tool_calls": calls or None}


def _text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise PromptError("messages: only text content parts are served here (the simulated model "
                                  "takes no images, audio or video)")
            texts.append(part["text"])
        return "\n".join(texts)
    raise PromptError("messages: content must be a string or a list of text parts")


def _call(call) -> tuple[str, object]:
    """A tool call's name and arguments (arguments given as a JSON string are read, as vLLM reads
    them before the template sees them)."""
    fn = call.get("function", call) if isinstance(call, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise PromptError("messages: a tool call needs a function with a name")
    args = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            pass
    return fn["name"], args


def _identity(m: dict) -> str:
    return f"{m['role']}\x00{m['content']}\x00{json.dumps(m['tool_calls'], sort_keys=True, default=str)}"


def _llama3(chat: list[dict], date: str) -> list[tuple[str, str]]:
    system = ""
    if chat[0]["role"] == "system":
        system = chat[0]["content"].strip()
        first, chat = chat[0], chat[1:]
    else:
        first = {"role": "system", "content": "", "tool_calls": None}
    head = (f"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December "
            f"2023\nToday Date: {date}\n\n{system}<|eot_id|>")
    parts = [(_identity(first), head)]
    for m in chat:
        role, calls = m["role"], m["tool_calls"]
        if role in ("tool", "ipython"):
            # (the template writes a string content as JSON too: a string is iterable in Jinja)
            text = f"<|start_header_id|>ipython<|end_header_id|>\n\n{json.dumps(m['content'])}<|eot_id|>"
        elif calls:
            if len(calls) != 1:
                raise PromptError("messages: This model only supports single tool-calls at once!")
            name, args = _call(calls[0])
            text = (f'<|start_header_id|>assistant<|end_header_id|>\n\n{{"name": "{name}", "parameters": '
                    f"{json.dumps(args)}}}<|eot_id|>")
        else:
            text = f"<|start_header_id|>{role}<|end_header_id|>\n\n{m['content'].strip()}<|eot_id|>"
        parts.append((_identity(m), text))
    return parts


def _qwen(chat: list[dict]) -> list[tuple[str, str]]:
    parts = []
    if chat[0]["role"] == "system":
        parts.append((_identity(chat[0]), f"<|im_start|>system\n{chat[0]['content']}<|im_end|>\n"))
    else:
        parts.append(("<default system>", f"<|im_start|>system\n{QWEN_SYSTEM}<|im_end|>\n"))
    for i, m in enumerate(chat):
        role, calls = m["role"], m["tool_calls"]
        if role == "system" and i == 0:
            continue
        if role == "tool":
            before = chat[i - 1]["role"] if i > 0 else None
            after = chat[i + 1]["role"] if i + 1 < len(chat) else None
            text = (("<|im_start|>user" if before != "tool" else "") + f"\n<tool_response>\n{m['content']}\n"
                    "</tool_response>" + ("<|im_end|>\n" if after != "tool" else ""))
        elif role == "assistant" and calls:
            text = "<|im_start|>assistant" + (f"\n{m['content']}" if m["content"] else "")
            for call in calls:
                name, args = _call(call)
                text += f'\n<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(args)}}}\n</tool_call>'
            text += "<|im_end|>\n"
        else:
            text = f"<|im_start|>{role}\n{m['content']}<|im_end|>\n"
        parts.append((_identity(m), text))
    return parts


def _chatml_turn(m: dict) -> tuple[str, str]:
    return _identity(m), f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
