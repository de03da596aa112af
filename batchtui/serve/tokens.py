"""Token counts and token ids without the model's tokenizer, and the answer's text.

The rule (stated in the manual, docs/serve.md): a text is `sim.workload.estimate_tokens(text)` tokens (a word
of up to six letters is one token, longer words one per six letters, a number of up to three
digits or a run of punctuation one, each `_` one), cut into those tokens by
`sim.workload.token_pieces`; a prompt sent as token ids is that many tokens. The model's family
(`family_of`) adds what its tokenizer adds: its special tokens (`<|eot_id|>`, `<|im_start|>`...)
are one token each wherever they stand in a text, as Hugging Face tokenizers read them, and a
Llama's tokenizer puts its begin-of-text token before a prompt when special tokens are asked for
(`add_special_tokens`, vLLM's default for /v1/completions and /tokenize).

Token ids (`Tokenizer.encode`, `Tokenizer.decode`, /tokenize and /detokenize) are batchtui's own,
the same on every server: a token's id is its UTF-8 bytes read as one number after a leading 1
byte (" the" is 0x01_20_74_68_65), so ids decode without a table and a text always gets the same
ids; ids below 256 are the special tokens (`SPECIAL_TOKENS`). The ids of a prefix of a text's
tokens decode to a text of exactly that many tokens (the property vLLM's benchmark client relies
on when it trims prompts through /tokenize and /detokenize).

The answer is filler: short words, one token each by the same rule, so a client that counts an
answer's tokens with it finds the number the server reports.

A long text is counted a piece at a time (`text_tokens`), so that counting it in a thread lets the
event loop run between pieces: one call of the rule on megabytes holds the interpreter for as
long as it takes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sim.workload import estimate_tokens, token_pieces

# One token each by estimate_tokens (a leading space joins its word).
WORDS = (" the", " batch", " of", " tokens", " runs", " on", " a", " model", " GPU", " and",
         " every", " step", " adds", " one", " more", " word")


class PromptError(ValueError):
    """A request body whose prompt cannot be counted (the message says why, for a 400)."""


class TokenError(ValueError):
    """Token ids that are not batchtui's (the message says which, for a 400)."""


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


# -- token ids ------------------------------------------------------------------------------------

# Special tokens of the tokenizers batchtui knows (their tokenizer_config.json files on Hugging
# Face: Llama 3.x's begin/end of text, header, end-of-turn, end-of-message and python tokens;
# Qwen2.5's end of text and ChatML turn markers; Llama 2's <s> and </s>), numbered from 1 here.
SPECIAL_TOKENS = ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                  "<|eot_id|>", "<|eom_id|>", "<|python_tag|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>",
                  "<s>", "</s>")
SPECIAL_ID = {token: i + 1 for i, token in enumerate(SPECIAL_TOKENS)}


def piece_id(piece: str) -> int:
    """A token's id: its UTF-8 bytes after a 1 byte, read as one big-endian number (>= 256)."""
    return int.from_bytes(b"\x01" + piece.encode("utf-8", "surrogatepass"), "big")


def id_piece(token_id: int) -> str | None:
    """The token an id stands for (None if no token has it)."""
    if token_id < 256:
        return SPECIAL_TOKENS[token_id - 1] if 1 <= token_id <= len(SPECIAL_TOKENS) else None
    data = token_id.to_bytes((token_id.bit_length() + 7) // 8, "big")
    if data[0] != 1:
        return None
    try:
        return data[1:].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None


# -- model families ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Family:
    """What a model's tokenizer and chat template add to a prompt: its special tokens, the
    begin-of-text token it puts first when special tokens are asked for, and which chat template
    formats its chats (`batchtui.serve.templates`; None: it has none, and vLLM refuses chats)."""

    name: str
    specials: tuple[str, ...]
    bos: str | None
    template: str | None


# The templates and tokens are those of the models' tokenizer_config.json (meta-llama/Llama-3.1-8B-
# Instruct: add_bos_token, <|begin_of_text|> as bos_token; Qwen/Qwen2.5-7B-Instruct: bos_token null;
# meta-llama/Llama-2-7b-hf: <s>, and no chat_template).
LLAMA3 = Family("llama3", ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                           "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"), "<|begin_of_text|>", "llama3")
QWEN2 = Family("qwen2.5", ("<|endoftext|>", "<|im_start|>", "<|im_end|>"), None, "qwen2.5")
LLAMA2 = Family("llama2", ("<s>", "</s>"), "<s>", None)
CHATML = Family("chatml", ("<|im_start|>", "<|im_end|>", "<|endoftext|>"), None, "chatml")
"""A model batchtui knows no template for: its chats are laid out as ChatML (no default system
message), its prompts get no begin-of-text token."""

_FAMILY_PREFIXES = (("meta-llama/llama-3", LLAMA3), ("meta-llama/meta-llama-3", LLAMA3), ("llama-3", LLAMA3),
                    ("qwen/qwen2.5", QWEN2), ("qwen2.5", QWEN2), ("meta-llama/llama-2", LLAMA2),
                    ("llama-2", LLAMA2))


def family_of(*names: str) -> Family:
    """The family of a model known by these names (its Hugging Face id, aliases, batchtui id):
    Llama 3.x, Qwen2.5, Llama 2, else ChatML."""
    for name in names:
        low = (name or "").lower()
        for prefix, family in _FAMILY_PREFIXES:
            if low.startswith(prefix):
                return family
    return CHATML


class Tokenizer:
    """batchtui's tokenizer for one model family: counts (`count`), ids (`encode`, `decode`)."""

    def __init__(self, family: Family) -> None:
        self.family = family
        self.bos_id = SPECIAL_ID[family.bos] if family.bos else None
        self._specials = frozenset(family.specials)
        self._split = re.compile("(" + "|".join(re.escape(s) for s in family.specials) + ")")
        self._starts = "".join(sorted({s[0] for s in family.specials}))

    def segments(self, text: str):
        """The text as (part, is a special token), special tokens cut out whole."""
        if not any(c in text for c in self._starts):
            if text:
                yield text, False
            return
        for part in self._split.split(text):
            if part:
                yield part, part in self._specials

    def count(self, text: str) -> int:
        """Tokens of a text (its special tokens one each; no begin-of-text token added)."""
        return sum(1 if special else text_tokens(part) for part, special in self.segments(text))

    def prompt_tokens(self, text: str, add_special_tokens: bool) -> int:
        """Tokens of a text prompt, with the begin-of-text token when special tokens are asked for."""
        return self.count(text) + (1 if add_special_tokens and self.bos_id is not None else 0)

    def pieces(self, text: str) -> list[str]:
        """The text's tokens as text (as many as `count` says; joined, the text)."""
        out: list[str] = []
        for part, special in self.segments(text):
            if special:
                out.append(part)
            else:
                out.extend(token_pieces(part))
        return out

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids = [SPECIAL_ID[p] if p in self._specials else piece_id(p) for p in self.pieces(text)]
        if add_special_tokens and self.bos_id is not None:
            ids.insert(0, self.bos_id)
        return ids

    def token_strs(self, ids: list[int]) -> list[str]:
        return [self._piece(i) for i in ids]

    def decode(self, ids: list[int]) -> str:
        """The text of batchtui's token ids (TokenError for an id that is none of them)."""
        return "".join(self._piece(i) for i in ids)

    def _piece(self, token_id: int) -> str:
        piece = id_piece(token_id) if isinstance(token_id, int) and token_id >= 0 else None
        if piece is None or (token_id < 256 and piece not in self._specials):
            raise TokenError(f"Token id {token_id} is out of vocabulary: batchtui serve's token ids are its "
                             "own (/tokenize gives them), not the model's")
        return piece


# -- request fields -----------------------------------------------------------------------------------

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


MAX_COMPLETION_PROMPTS = 1024
"""The most prompts one /v1/completions request may list (vLLM's VLLM_MAX_COMPLETION_PROMPTS
default, vllm/envs.py)."""


def completion_prompts(body: dict) -> list[str | list[int]]:
    """The prompts of a /v1/completions request, each a text or a list of token ids, as vLLM's
    CompletionRequest takes them (a text, token ids, or a list of either)."""
    prompt = body.get("prompt")
    if prompt is None or prompt == "" or prompt == []:
        raise PromptError("Either prompt or prompt_embeds must be provided and non-empty.")
    if isinstance(prompt, str):
        return [prompt]
    if not isinstance(prompt, list):
        raise PromptError("prompt: a string, a list of strings or a list of token ids is required")
    if all(_is_id(t) for t in prompt):
        return [_token_ids(prompt)]
    if len(prompt) > MAX_COMPLETION_PROMPTS:
        raise PromptError(f"prompt list length {len(prompt)} exceeds the maximum allowed count of "
                          f"{MAX_COMPLETION_PROMPTS}.")
    out: list[str | list[int]] = []
    for p in prompt:
        if isinstance(p, str):
            if not p:
                raise PromptError("prompt: a prompt of the list is empty")
            out.append(p)
        elif isinstance(p, list):
            out.append(_token_ids(p))
        else:
            raise PromptError("prompt: a list holds strings or lists of token ids")
    return out


def _is_id(t) -> bool:
    return isinstance(t, int) and not isinstance(t, bool)


def _token_ids(ids) -> list[int]:
    if not ids or not all(_is_id(t) and t >= 0 for t in ids):
        raise PromptError("prompt: a non-empty list of token ids (integers >= 0) is required")
    return ids


def filler(start: int, count: int) -> str:
    """The answer's tokens `start` to `start + count` (each one word)."""
    n = len(WORDS)
    return "".join(WORDS[i % n] for i in range(start, start + count))


def filler_word(index: int) -> str:
    """The answer's token number `index` (from 0)."""
    return WORDS[index % len(WORDS)]


_WORD_CHARS = [0]
for _w in WORDS:
    _WORD_CHARS.append(_WORD_CHARS[-1] + len(_w))
WORD_IDS = tuple(piece_id(w) for w in WORDS)


def filler_chars(count: int) -> int:
    """Characters of the answer's first `count` tokens."""
    cycles, rest = divmod(count, len(WORDS))
    return cycles * _WORD_CHARS[-1] + _WORD_CHARS[rest]


@dataclass(frozen=True)
class Answer:
    """How a choice's filler answer ends: its tokens, why it ends ("length", or "stop" with the
    string or token id that stopped it), and its text's length in characters (a stop cuts it)."""

    tokens: int
    reason: str = "length"
    stop_reason: str | int | None = None
    chars: int | None = None

    def text(self, start: int, end: int) -> str:
        """The text of its tokens `start` to `end` (as much of it as the answer keeps)."""
        full = filler_chars(end)
        keep = full if self.chars is None else min(full, self.chars)
        a = filler_chars(start)
        return filler(start, end - start)[:max(0, keep - a)]


def plan_answer(max_tokens: int, min_tokens: int = 0, stop=(), stop_token_ids=frozenset(),
                include_stop: bool = False) -> Answer:
    """Where vLLM's stop checks end the filler answer: the first token after the first
    `min_tokens` whose id is in `stop_token_ids` (its text left out unless `include_stop`), or
    that completes one of the `stop` strings (the earliest-ending match, the text cut before it,
    or after it with `include_stop`); else `max_tokens` tokens."""
    if not stop and not stop_token_ids:
        return Answer(max_tokens)
    longest = max((len(s) for s in stop), default=0)
    # The filler repeats every len(WORDS) tokens: a match not found by then never comes. A match
    # may begin before token min_tokens (at most `longest` characters, each word two or more).
    start = max(0, min_tokens - longest)
    end = min(max_tokens, min_tokens + 2 * len(WORDS) + longest)
    base = filler_chars(start)
    text = ""
    for i in range(start, end):
        word = WORDS[i % len(WORDS)]
        count = i + 1
        if count > min_tokens and WORD_IDS[i % len(WORDS)] in stop_token_ids:
            chars = base + len(text) + (len(word) if include_stop else 0)
            return Answer(count, "stop", WORD_IDS[i % len(WORDS)], chars)
        text += word
        if count <= min_tokens or not stop:
            continue
        # (only matches that end in this token's text and after the first min_tokens tokens)
        best = None
        for s in stop:
            at = text.find(s, max(0, len(text) - len(word) - len(s) + 1))
            if at != -1 and (best is None or at + len(s) < best[0] + len(best[1])):
                best = (at, s)
        if best is not None:
            at, s = best
            return Answer(count, "stop", s, base + at + (len(s) if include_stop else 0))
    return Answer(max_tokens)
