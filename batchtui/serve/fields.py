"""Every field of vLLM 0.33's CompletionRequest and ChatCompletionRequest, and what `batchtui serve`
does with it: one table (`FIELDS`), read by the server (`read_options`) and printed in the manual
(`markdown_table`, docs/serve.md, generated when it is built; a test checks the page against it, and the table against the field names
of vLLM's request models in tests/data/vllm-request-fields.txt).

A field is one of three kinds:

- honoured: it does to the simulated request what it does in vLLM, as far as a simulator can
  (the answer is filler text: `stop` is matched against that text, `n` runs n requests...);
- accepted: read and checked as vLLM checks it (its range, vLLM's message), changing nothing
  here, and the note says why (a sampling temperature cannot change a filler answer);
- refused: given with a value other than those in `ok` (its defaults), the request gets vLLM's
  400 error shape saying why the simulator cannot honour it.

A field vLLM does not know is ignored, as vLLM ignores it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .tokens import PromptError, flag

KINDS = ("honoured", "accepted", "refused")
ROUTES = ("completions", "chat")
C, H, B = ("completions",), ("chat",), ("completions", "chat")

MAX_LOGPROBS = 20
"""The most logprobs a request may ask for (vLLM's ModelConfig.max_logprobs default, 20)."""
MAX_N = 16384
"""The largest n (vLLM's VLLM_MAX_N_SEQUENCES default, vllm/envs.py)."""
MAX_STOP_STRINGS = 4
"""The most stop strings a request may give (vLLM's VLLM_MAX_STOP_STRINGS default)."""
INT64 = (-(2**63), 2**63 - 1)


class FieldError(ValueError):
    """A request field vLLM would refuse, or the simulator cannot honour: a 400 with this message
    and `param`."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class RequestField:
    name: str
    routes: tuple[str, ...]
    kind: str
    note: str
    ok: tuple = (None,)
    """For a refused field: the values taken (they change nothing)."""


FILLER = "the answer is filler text"
FIELDS: tuple[RequestField, ...] = (
    RequestField("model", B, "honoured", "the served model's name (--served-model-name); another gets vLLM's 404"),
    RequestField("prompt", C, "honoured", "a text, token ids, or a list of either (up to 1,024, each its own "
                 "requests, choices numbered prompt by prompt); counted by batchtui's token rule"),
    RequestField("messages", H, "honoured", "laid out as the model's chat template lays them out, and counted "
                 "by the token rule: Llama 3.x's and Qwen2.5's templates, ChatML for other models; text "
                 "content only; a chat's earlier messages are its prefix-cache identity"),
    RequestField("max_tokens", B, "honoured", "the answer's length: the filler never ends early, so this many "
                 "tokens unless a stop matches (/v1/completions: 16 if not given, as vLLM's default; chat: what "
                 "the context leaves); larger than what the context leaves is cut to it, as vLLM does"),
    RequestField("max_completion_tokens", H, "honoured", "as max_tokens (it wins over max_tokens)"),
    RequestField("n", B, "honoured", "n choices, each its own request in the engine as vLLM's parallel sampling "
                 "makes them (the same prompt, so the later ones hit the prefix cache); n > 1 with temperature 0 "
                 "gets vLLM's 400"),
    RequestField("stream", B, "honoured", "server-sent events, one per iteration's worth of tokens"),
    RequestField("stream_options", B, "honoured", "include_usage (a last chunk with usage) and "
                 "continuous_usage_stats (usage in every chunk); only with stream, as vLLM requires"),
    RequestField("stream_interval", B, "honoured", "tokens per chunk, raised to at least --stream-interval"),
    RequestField("stop", B, "honoured", "matched against the filler text (its words: the, batch, of, tokens, "
                 "runs, on, a, model, GPU, and, every, step, adds, one, more, word): a match ends the choice "
                 "there with finish_reason stop and stop_reason the string, the text cut before it; a string "
                 "the filler never writes never matches, and the answer runs to max_tokens"),
    RequestField("stop_token_ids", B, "honoured", "matched against the filler's token ids (/tokenize gives "
                 "them): the choice ends at that token, stop_reason the id"),
    RequestField("include_stop_str_in_output", B, "honoured", "keeps the matched stop string in the text"),
    RequestField("min_tokens", B, "honoured", "no stop ends a choice before this many tokens; the filler never "
                 "emits EOS, so the length is max_tokens unless a stop matches after min_tokens (vLLM's "
                 "ignore_eos semantics on lengths); more than max_tokens gets vLLM's 400"),
    RequestField("ignore_eos", B, "honoured", "the filler never emits EOS: with or without it the answer runs "
                 "to max_tokens (finish_reason length), as vLLM with ignore_eos"),
    RequestField("logprobs", B, "honoured", "each token's logprob is 0.0: the filler is the only answer the "
                 "simulated model has (probability 1); top logprobs list that token alone; at most 20, as "
                 "vLLM's max_logprobs; the time vLLM spends on them is not modelled"),
    RequestField("top_logprobs", H, "honoured", "as logprobs (needs logprobs true, as vLLM says)"),
    RequestField("return_tokens_as_token_ids", B, "honoured", "logprob tokens spelled token_id:N"),
    RequestField("return_token_ids", B, "honoured", "token_ids of the answer and prompt_token_ids of the "
                 "prompt, in batchtui's token ids"),
    RequestField("add_special_tokens", B, "honoured", "the begin-of-text token a Llama's tokenizer adds "
                 "(default true for /v1/completions, false for chat, as vLLM)"),
    RequestField("add_generation_prompt", H, "honoured", "the assistant's header after the chat (default true)"),
    RequestField("continue_final_message", H, "honoured", "the chat ends at the last message's content, open"),
    RequestField("truncate_prompt_tokens", B, "honoured", "the prompt cut to its last N tokens (-1: "
                 "max_model_len), or its first N with truncation_side right"),
    RequestField("truncation_side", B, "honoured", "left (keep the last tokens, the default) or right"),
    RequestField("priority", B, "honoured", "the request's priority under --scheduling-policy priority (lower "
                 "first); ignored under fcfs, as vLLM ignores it"),
    RequestField("cache_salt", B, "honoured", "salts the prompt's prefix-cache identity: only requests with "
                 "the same salt share blocks"),
    RequestField("request_id", B, "honoured", "names the response (cmpl-<id>, chatcmpl-<id>); the X-Request-Id "
                 "header wins, as in vLLM"),
    RequestField("chat_template_kwargs", H, "honoured", "date_string sets Llama 3's date line; other keys are "
                 "ones the known templates do not read (custom_tools, builtin_tools are refused with tools)"),
    RequestField("seed", B, "accepted", f"{FILLER}, the same whatever the seed (as a seeded vLLM repeats "
                 "itself); a seed outside int64 gets vLLM's 400"),
    RequestField("temperature", B, "accepted", f"{FILLER}, the same whatever the sampling; checked in [0, 2] as "
                 "vLLM checks it (0: greedy, so n must be 1); sampling's cost is not modelled"),
    RequestField("top_p", B, "accepted", f"{FILLER}; checked in (0, 1]"),
    RequestField("top_k", B, "accepted", f"{FILLER}; checked: 0 or -1 (off) or at least 1"),
    RequestField("min_p", B, "accepted", f"{FILLER}; checked in [0, 1]"),
    RequestField("frequency_penalty", B, "accepted", f"{FILLER}; checked in [-2, 2]"),
    RequestField("presence_penalty", B, "accepted", f"{FILLER}; checked in [-2, 2]"),
    RequestField("repetition_penalty", B, "accepted", f"{FILLER}; checked finite and > 0"),
    RequestField("logit_bias", B, "accepted", f"{FILLER}, whatever the biases"),
    RequestField("length_penalty", B, "accepted", "used by beam search only (refused here), as in vLLM"),
    RequestField("skip_special_tokens", B, "accepted", "the filler has no special tokens"),
    RequestField("spaces_between_special_tokens", B, "accepted", "the filler has no special tokens"),
    RequestField("user", B, "accepted", "an end user's name: vLLM ignores it too"),
    RequestField("session_id", B, "accepted", "a session's name for routing: one engine here, nothing to route"),
    RequestField("vllm_xargs", B, "accepted", "arguments for vLLM extensions: none is loaded"),
    RequestField("routed_experts_prompt_start", B, "accepted", "routed experts are not returned"),
    RequestField("return_token_offsets", B, "accepted", "for vLLM's /render endpoints; ignored on generation, as "
                 "vLLM ignores it"),
    RequestField("mm_payload", B, "accepted", "for vLLM's /render endpoints; ignored on generation"),
    RequestField("return_mm_kwargs", B, "accepted", "for vLLM's /render endpoints; ignored on generation"),
    RequestField("thinking_token_budget", B, "accepted", "the simulated models are not reasoning models"),
    RequestField("reasoning_effort", H, "accepted", "the known templates do not read it; no reasoning model"),
    RequestField("include_reasoning", H, "accepted", "no reasoning model: no reasoning to include"),
    RequestField("parallel_tool_calls", H, "accepted", "tools are refused: no tool calls to run in parallel"),
    RequestField("documents", H, "accepted", "the known templates do not read documents"),
    RequestField("media_io_kwargs", H, "accepted", "text only: no media to load"),
    RequestField("mm_processor_kwargs", H, "accepted", "text only: no multimodal processor"),
    RequestField("echo", B, "refused", "echoing the prompt (with its logprobs, what echo is used for) needs the "
                 "prompt's probabilities, which the simulated model does not have", (None, False)),
    RequestField("suffix", C, "refused", "vLLM's answer for the served models: suffix needs a model with "
                 "fill-in-the-middle rendering"),
    RequestField("prompt_logprobs", B, "refused", "the simulated model has no probabilities for a prompt"),
    RequestField("logprob_token_ids", B, "refused", "the simulated model has no probabilities for other tokens"),
    RequestField("use_beam_search", B, "refused", "beam search is not simulated", (None, False)),
    RequestField("allowed_token_ids", B, "refused", "the filler cannot be restricted to given tokens"),
    RequestField("bad_words", B, "refused", "the filler cannot avoid given words", (None, ())),
    RequestField("response_format", B, "refused", "structured output cannot be simulated: the filler is not "
                 "JSON (type text is taken)", (None,)),
    RequestField("structured_outputs", B, "refused", "structured output cannot be simulated"),
    RequestField("repetition_detection", B, "refused", "the filler repeats a cycle of 16 words by design: "
                 "detecting that would end every answer early"),
    RequestField("watermarking", B, "refused", "no watermark config in the simulator", (None, False)),
    RequestField("return_weight_versions", B, "refused", "no weight updates in the simulator", (None, False)),
    RequestField("prompt_embeds", C, "refused", "prompt embeddings need --enable-prompt-embeds and a real model"),
    RequestField("kv_transfer_params", B, "refused", "no disaggregated prefill (KV transfer) in the simulator"),
    RequestField("ec_transfer_params", B, "refused", "no encoder-cache transfer in the simulator"),
    RequestField("tools", H, "refused", "tool calling cannot be simulated: the filler never calls a tool (a "
                 "tool call or a tool's answer in the history is laid out as the template lays it)"),
    RequestField("tool_choice", H, "refused", "tools are refused (none is taken)", (None, "none")),
    RequestField("chat_template", H, "refused", "vLLM refuses a request's own template unless "
                 "--trust-request-chat-template; batchtui lays out only the templates it knows"),
    RequestField("return_prompt_text", H, "refused", "the prompt text is not returned", (None, False)),
)
BY_NAME = {f.name: f for f in FIELDS}


def fields_of(route: str) -> list[RequestField]:
    return [f for f in FIELDS if route in f.routes]


def markdown_table() -> str:
    """The manual's table of request fields (docs/serve.md)."""
    lines = ["| field | routes | batchtui serve |", "| --- | --- | --- |"]
    for f in FIELDS:
        routes = "both" if len(f.routes) == 2 else ("completions" if f.routes == C else "chat")
        lines.append(f"| `{f.name}` | {routes} | {f.kind}: {f.note} |")
    return "\n".join(lines)


@dataclass
class Options:
    """What a request asks of the server, read from its body (`read_options`)."""

    chat: bool
    stream: bool = False
    include_usage: bool = False
    continuous_usage: bool = False
    n: int = 1
    max_tokens: int | None = None
    max_tokens_param: str = "max_tokens"
    min_tokens: int = 0
    stop: list[str] = field(default_factory=list)
    stop_token_ids: frozenset = frozenset()
    include_stop: bool = False
    logprobs: int | None = None  # top logprobs asked for (None: none)
    as_token_ids: bool = False
    return_token_ids: bool = False
    add_special_tokens: bool = False
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    truncate: int | None = None
    truncation_side: str = "left"
    priority: int = 0
    cache_salt: str | None = None
    request_id: str | None = None
    stream_interval: int = 1
    date_string: str | None = None


def read_options(body: dict, chat: bool) -> Options:
    """The options of a /v1/completions (or, `chat`, /v1/chat/completions) body, checked as vLLM
    checks them; FieldError for what vLLM refuses or the simulator cannot honour."""
    route = "chat" if chat else "completions"
    for name, value in body.items():
        f = BY_NAME.get(name)
        if f is None or route not in f.routes or f.kind != "refused":
            continue
        if not _taken(name, value, f.ok):
            if name == "suffix":
                raise FieldError(name, "suffix is only supported for models with FIM completion rendering")
            raise FieldError(name, f"{name}: not served by batchtui's simulated engine: {f.note}")
    o = Options(chat=chat)
    o.stream = bool(_flag(body, "stream"))
    so = body.get("stream_options")
    if so is not None:
        if not isinstance(so, dict):
            raise FieldError("stream_options", "stream_options: Input should be a valid dictionary")
        if so and not o.stream:
            raise FieldError("stream_options", "Stream options can only be defined when `stream=True`.")
        o.include_usage = bool(_flag(so, "include_usage", "stream_options.include_usage"))
        o.continuous_usage = o.include_usage and bool(_flag(so, "continuous_usage_stats",
                                                            "stream_options.continuous_usage_stats"))
    o.n = _int(body, "n", 1)
    if o.n < 1:
        raise FieldError("n", f"n must be at least 1, got {o.n}.")
    if o.n > MAX_N:
        raise FieldError("n", f"n must be at most {MAX_N}, got {o.n}. To increase this limit, set the "
                              "VLLM_MAX_N_SEQUENCES environment variable.")
    if chat and body.get("max_completion_tokens") is not None:
        o.max_tokens, o.max_tokens_param = _int(body, "max_completion_tokens", None), "max_completion_tokens"
    else:
        o.max_tokens = _int(body, "max_tokens", None if chat else 16)
    if o.max_tokens is not None and o.max_tokens < 1:
        raise FieldError(o.max_tokens_param, f"max_tokens must be at least 1, got {o.max_tokens}.")
    o.min_tokens = _int(body, "min_tokens", 0)
    if o.min_tokens < 0:
        raise FieldError("min_tokens", f"min_tokens must be greater than or equal to 0, got {o.min_tokens}.")
    _sampling(body, o)
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if stop is None:
        stop = []
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise FieldError("stop", "stop: a string or a list of strings is required")
    if len(stop) > MAX_STOP_STRINGS:
        raise FieldError("stop", f"stop: List should have at most {MAX_STOP_STRINGS} items after validation, "
                                 f"not {len(stop)}")
    if any(not s for s in stop):
        raise FieldError("stop", "stop cannot contain an empty string.")
    o.stop = list(dict.fromkeys(stop))
    ids = body.get("stop_token_ids") or []
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise FieldError("stop_token_ids", f"stop_token_ids must contain only integers, got {ids}.")
    o.stop_token_ids = frozenset(ids)
    o.include_stop = bool(_flag(body, "include_stop_str_in_output"))
    _flag(body, "ignore_eos")
    _logprobs(body, o)
    o.as_token_ids = bool(_flag(body, "return_tokens_as_token_ids"))
    o.return_token_ids = bool(_flag(body, "return_token_ids"))
    o.add_special_tokens = _flag(body, "add_special_tokens") if body.get("add_special_tokens") is not None \
        else not chat
    if chat:
        agp, cfm = _flag(body, "add_generation_prompt"), _flag(body, "continue_final_message")
        if agp and cfm:
            raise FieldError("continue_final_message", "Cannot set both `continue_final_message` and "
                                                       "`add_generation_prompt` to True.")
        o.continue_final_message = bool(cfm)
        o.add_generation_prompt = agp is not False and not o.continue_final_message
        kwargs = body.get("chat_template_kwargs") or {}
        if not isinstance(kwargs, dict):
            raise FieldError("chat_template_kwargs", "chat_template_kwargs: Input should be a valid dictionary")
        for key in ("tools", "custom_tools", "builtin_tools"):
            if kwargs.get(key):
                raise FieldError("chat_template_kwargs", f"chat_template_kwargs.{key}: not served by batchtui's "
                                                         f"simulated engine: {BY_NAME['tools'].note}")
        if kwargs.get("date_string") is not None:
            o.date_string = str(kwargs["date_string"])
    truncate = _int(body, "truncate_prompt_tokens", None)
    if truncate is not None and truncate < -1:
        raise FieldError("truncate_prompt_tokens", "truncate_prompt_tokens: Input should be greater than or "
                                                   "equal to -1")
    o.truncate = truncate
    side = body.get("truncation_side")
    if side not in (None, "left", "right"):
        raise FieldError("truncation_side", "`truncation_side` must be either 'left' or 'right'.")
    o.truncation_side = side or "left"
    o.priority = _int(body, "priority", 0, INT64)
    salt = body.get("cache_salt")
    if salt is not None:
        if not isinstance(salt, str) or not salt:
            raise FieldError("cache_salt", "Parameter 'cache_salt' must be a non-empty string if provided.")
        if len(salt) > 128 or any(c in "@/\\\x00" for c in salt):
            raise FieldError("cache_salt", "Parameter 'cache_salt' must be at most 128 characters and must not "
                                           "contain '@', '/', '\\\\', or NUL.")
        o.cache_salt = salt
    rid = body.get("request_id")
    if rid is not None and not isinstance(rid, str):
        raise FieldError("request_id", "request_id: Input should be a valid string")
    o.request_id = rid
    interval = _int(body, "stream_interval", None)
    if interval is not None and interval < 1:
        raise FieldError("stream_interval", f"stream_interval must be at least 1, got {interval}.")
    o.stream_interval = interval or 1
    return o


def _taken(name: str, value, ok) -> bool:
    """Whether a refused field's value is one that changes nothing (its default)."""
    if name == "response_format" and isinstance(value, dict) and value.get("type") == "text":
        return True
    for v in ok:
        if (v is None and value is None) or (v is False and value is False) or (v == () and value == []) \
                or (isinstance(v, str) and value == v):
            return True
    return False


def _flag(body: dict, name: str, shown: str | None = None):
    try:
        return flag(body.get(name), shown or name)
    except PromptError as exc:
        raise FieldError(name, str(exc)) from None


def _int(body: dict, name: str, default, bounds=INT64):
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # (pydantic's lax integers: 16.0 is 16)
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(name, f"{name}: Input should be a valid integer (got {_shown(value)})")
    if not bounds[0] <= value <= bounds[1]:
        raise FieldError(name, f"{name}: Input should be between {bounds[0]} and {bounds[1]}")
    return value


def _num(body: dict, name: str):
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldError(name, f"{name}: Input should be a valid number (got {_shown(value)})")
    return float(value)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "..."


def _sampling(body: dict, o: Options) -> None:
    """The sampling fields, checked with vLLM's SamplingParams messages (they change no filler)."""
    _int(body, "seed", None)
    for name in ("presence_penalty", "frequency_penalty"):
        v = _num(body, name)
        if v is not None and not -2.0 <= v <= 2.0:
            raise FieldError(name, f"{name} must be in [-2, 2], got {v}.")
    v = _num(body, "repetition_penalty")
    if v is not None and (not math.isfinite(v) or v <= 0.0):
        raise FieldError("repetition_penalty", f"repetition_penalty must be a finite number greater than zero, "
                                               f"got {v}.")
    t = _num(body, "temperature")
    if t is not None:
        if not math.isfinite(t):
            raise FieldError("temperature", f"temperature must be a finite number, got {t}.")
        if t < 0.0:
            raise FieldError("temperature", f"temperature must be non-negative, got {t}.")
        if t > 2.0:
            raise FieldError("temperature", f"temperature must be in [0, 2], got {t}.")
    v = _num(body, "top_p")
    if v is not None and not 0.0 < v <= 1.0:
        raise FieldError("top_p", f"top_p must be in (0, 1], got {v}.")
    if body.get("top_k") is not None:
        k = _int(body, "top_k", None)
        if k < -1:
            raise FieldError("top_k", f"top_k must be 0 (disable), or at least 1, got {k}.")
    v = _num(body, "min_p")
    if v is not None and not 0.0 <= v <= 1.0:
        raise FieldError("min_p", f"min_p must be in [0, 1], got {v}.")
    bias = body.get("logit_bias")
    if bias is not None and not isinstance(bias, dict):
        raise FieldError("logit_bias", "logit_bias: Input should be a valid dictionary")
    # Zero temperature is greedy sampling (below 1e-5: vLLM's _SAMPLING_EPS): one answer only.
    if t is not None and t < 1e-5 and o.n > 1:
        raise FieldError("n", f"n must be 1 when using greedy sampling, got {o.n}.")


def _logprobs(body: dict, o: Options) -> None:
    if o.chat:
        want = _flag(body, "logprobs")
        top = body.get("top_logprobs")
        if top is not None and (isinstance(top, bool) or not isinstance(top, (int, float))):
            raise FieldError("top_logprobs", "`top_logprobs` must be an integer.")
        top = int(top or 0)
        if top < 0 and top != -1:
            raise FieldError("top_logprobs", "`top_logprobs` must be a positive value or -1.")
        if top and not want:
            raise FieldError("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
        asked = top if want else None
    else:
        asked = body.get("logprobs")
        if asked is not None and (isinstance(asked, bool) or not isinstance(asked, (int, float))):
            raise FieldError("logprobs", "`logprobs` must be an integer.")
        asked = None if asked is None else int(asked)
        if asked is not None and asked < 0 and asked != -1:
            raise FieldError("logprobs", "`logprobs` must be a positive value or -1.")
    if asked == -1:
        raise FieldError("logprobs", f"Requested sample logprobs of -1 (the whole vocabulary), which is greater "
                                     f"than max allowed: {MAX_LOGPROBS}")
    if asked is not None and asked > MAX_LOGPROBS:
        raise FieldError("logprobs", f"Requested sample logprobs of {asked}, which is greater than max allowed: "
                                     f"{MAX_LOGPROBS}")
    o.logprobs = asked
