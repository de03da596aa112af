"""Token counts without a tokenizer, and the answer's text.

The rule (stated in the README): a text is `sim.workload.estimate_tokens(text)` tokens (a word
of up to six letters is one token, longer words one per six letters, a number of up to three
digits or a run of punctuation one); a prompt sent as token ids is that many tokens. A chat is
formatted as Llama 3's template formats it: one token to begin, five per message (its role header
and end-of-turn marker) and four for the assistant's header the answer follows.

The answer is filler: short words, one token each by the same rule, so a client that counts an
answer's tokens with it finds the number the server reports.

A long text is counted a piece at a time (`text_tokens`), so that counting it in a thread lets the
event loop run between pieces: one call of the rule on megabytes holds the interpreter for as
long as it takes.
"""

from __future__ import annotations

import re

from sim.workload import estimate_tokens

CHAT_BEGIN_TOKENS = 1
CHAT_TOKENS_PER_MESSAGE = 5
CHAT_GENERATION_PROMPT_TOKENS = 4

# One token each by estimate_tokens (a leading space joins its word).
WORDS = (" the", " batch", " of", " tokens", " runs", " on", " a", " model", " GPU", " and",
         " every", " step", " adds", " one", " more", " word")


class PromptError(ValueError):
    """A request body whose prompt cannot be counted (the message says why, for a 400)."""


PIECE_CHARS = 1 << 16
"""Characters of text counted at a time (about a millisecond of the rule)."""

# Where a text may be cut without changing its count: a non-space followed by whitespace. No
# piece of the rule holds both (a word takes one leading space, whitespace runs only whitespace),
# and the rule looks at nothing before where a piece starts, so the pieces on either side of the
# cut are the text's own.
_CUT = re.compile(r"\S(?=\s)")


def text_tokens(text: str, piece: int = PIECE_CHARS) -> int:
    """`estimate_tokens(text)` (0 for no text), counted `piece` characters or so at a time."""
    if not text:
        return 0
    if len(text) <= piece:
        return estimate_tokens(text)
    total = 0
    start = 0
    while start < len(text):
        cut = _CUT.search(text, start + piece) if start + piece < len(text) else None
        end = cut.end() if cut is not None else len(text)
        part = text[start:end]
        # The rule counts at least 1 for any text; a part that is all spaces counts 0 in the whole.
        total += estimate_tokens(part) if (part.strip() or "\n" in part) else 0
        start = end
    return max(1, total)


_TRUE = frozenset(("1", "on", "t", "true", "y", "yes"))
_FALSE = frozenset(("0", "off", "f", "false", "n", "no"))


def flag(value, name: str) -> bool | None:
    """A request's boolean field as vLLM's request models read it (pydantic's lax booleans): true,
    false or null; 0 and 1 (also 0.0 and 1.0); the strings 1/0, on/off, t/f, true/false, y/n,
    yes/no in any case. Anything else raises PromptError (a 400, as vLLM's validation error)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if value == 0 or value == 1:
            return bool(value)
        if isinstance(value, float):
            raise PromptError(f"{name}: Input should be a valid boolean (got {value!r})")
    elif isinstance(value, str):
        word = value.lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    else:
        raise PromptError(f"{name}: Input should be a valid boolean (got {type(value).__name__})")
    shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:36]}..."
    raise PromptError(f"{name}: Input should be a valid boolean, unable to interpret input (got {shown})")


def completion_prompt_tokens(body: dict) -> int:
    """Tokens of a /v1/completions prompt: text, token ids, or a list holding one of them."""
    ids = body.get("prompt_token_ids")
    if ids is not None:
        return _token_ids(ids, "prompt_token_ids")
    prompt = body.get("prompt")
    if isinstance(prompt, list):
        if not prompt:  # no prompt at all, not several
            raise PromptError("prompt: the prompt cannot be empty")
        if all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
            return _token_ids(prompt, "prompt")
        if len(prompt) != 1:
            raise PromptError("prompt: one prompt per request (a list of several is not served here)")
        prompt = prompt[0]
        if isinstance(prompt, list):
            return _token_ids(prompt, "prompt")
    if not isinstance(prompt, str):
        raise PromptError("prompt: a string or a list of token ids is required")
    if not prompt:
        raise PromptError("prompt: the prompt cannot be empty")
    return text_tokens(prompt)


def chat_prompt_tokens(body: dict) -> int:
    """Tokens of a /v1/chat/completions request's messages once the chat template formats them."""
    return sum(n for _, n in chat_parts(body))


def chat_parts(body: dict) -> list[tuple[str, int]]:
    """The formatted chat as (what identifies the part, its tokens): each message with its share
    of the template (the first one also the begin token), then the assistant's header."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise PromptError("messages: a non-empty list of messages is required")
    parts = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise PromptError("messages: each message needs a role")
        n = CHAT_TOKENS_PER_MESSAGE + _content_tokens(m.get("content")) + (CHAT_BEGIN_TOKENS if i == 0 else 0)
        parts.append((f"{m['role']}\x00{m.get('content')!r}", n))
    parts.append(("<generation prompt>", CHAT_GENERATION_PROMPT_TOKENS))
    return parts


def _content_tokens(content) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise PromptError("messages: only text content parts are served here")
            total += text_tokens(part["text"])
        return total
    raise PromptError("messages: content must be a string or a list of text parts")


def _token_ids(ids, name: str) -> int:
    if not isinstance(ids, list) or not ids or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise PromptError(f"{name}: a non-empty list of token ids is required")
    return len(ids)


def filler(start: int, count: int) -> str:
    """The answer's tokens `start` to `start + count` (each one word)."""
    n = len(WORDS)
    return "".join(WORDS[i % n] for i in range(start, start + count))
