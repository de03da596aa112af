"""The HTTP side: vLLM's OpenAI-compatible routes, answered as vLLM 0.33 answers them (response
shapes of vllm/entrypoints/openai/*/protocol.py and serve/tokenize; errors as its ErrorResponse).

A request's body is read within the server's limits (`guard.read_body`: 413, 408), then read as
a request (`read_request`: JSON, the model, its options as `fields.read_options` reads them, its
prompts counted by `tokens` and laid out by `templates`, their prefix-cache identities), in a
thread when the body is long so that live streams keep flowing; each prompt is checked against
max_model_len with vLLM's messages and queued on the one engine (`pacer`) once per choice (`n`).
The answer is filler text whose tokens come out when the simulated GPU produces them: streamed
over server-sent events, one event per iteration's worth of tokens a choice, or whole at the end.
A client that goes away (its connection closes) aborts its request: the engine frees its blocks.
/tokenize and /detokenize speak batchtui's token ids (`tokens.Tokenizer`).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass

from aiohttp import web

from sim.dials import flag_of
from sim.errors import RequestRejected

from . import templates, tokens
from .fields import FieldError, Options, read_options
from .guard import BodyError, Connections, Limits, error_payload, read_body
from .pacer import Pacer, Stream, prompt_segments
from .prom import CONTENT_TYPE, ServerMetrics

PACER = web.AppKey("pacer", Pacer)
METRICS = web.AppKey("metrics", ServerMetrics)
MODEL = web.AppKey("model", str)
LIMITS = web.AppKey("limits", Limits)
TOKENIZER = web.AppKey("tokenizer", tokens.Tokenizer)

THREAD_BODY_BYTES = 1 << 16
"""A body this long or longer is read as a request in a thread (JSON and token counting), off the
event loop; a shorter one costs less than the hand-over."""


class ApiError(Exception):
    """An error answered in vLLM's ErrorResponse shape."""

    def __init__(self, status: int, message: str, kind: str = "BadRequestError", param: str | None = None):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.param = param


def error_response(exc: ApiError) -> web.Response:
    return web.json_response(error_payload(exc.status, str(exc), exc.kind, exc.param), status=exc.status)


def make_app(pacer: Pacer, metrics: ServerMetrics, model: str, limits: Limits = Limits(),
             connections: Connections | None = None, tokenizer: tokens.Tokenizer | None = None) -> web.Application:
    """The application; `connections` (the guard of its listening socket) hears which connections
    are in a request; `tokenizer` counts for the served model's family (ChatML's if not given)."""
    middlewares = [_errors]
    if connections is not None:
        @web.middleware
        async def in_request(request, handler):
            return await connections.middleware(request, handler)

        middlewares.insert(0, in_request)
    app = web.Application(middlewares=middlewares, client_max_size=limits.body_bytes)
    app[PACER] = pacer
    app[METRICS] = metrics
    app[MODEL] = model
    app[LIMITS] = limits
    app[TOKENIZER] = tokenizer or tokens.Tokenizer(tokens.CHATML)
    app.router.add_get("/health", health)
    app.router.add_get("/ping", health)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/metrics", prometheus)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/tokenize", tokenize)
    app.router.add_post("/detokenize", detokenize)
    return app


@web.middleware
async def _errors(request, handler):
    try:
        return await handler(request)
    except ApiError as exc:
        return error_response(exc)
    except BodyError as exc:
        kind = "RequestEntityTooLargeError" if exc.status == 413 else "RequestTimeoutError"
        response = error_response(ApiError(exc.status, str(exc), kind))
        if exc.status == 408:
            response.force_close()  # (a stalled body is not waited for again)
        return response


async def health(request: web.Request) -> web.Response:
    return web.Response(status=200)


async def models(request: web.Request) -> web.Response:
    app = request.app
    name = app[MODEL]
    card = {"id": name, "object": "model", "created": int(time.time()), "owned_by": "vllm", "root": name,
            "parent": None, "max_model_len": app[PACER].engine.config.max_model_len,
            "permission": []}
    return web.json_response({"object": "list", "data": [card]})


async def prometheus(request: web.Request) -> web.Response:
    return web.Response(body=request.app[METRICS].render(), headers={"Content-Type": CONTENT_TYPE})


@dataclass(frozen=True)
class Prompt:
    """One prompt as read: its tokens, its prefix-cache identity, and its ids when asked for."""

    tokens: int
    segments: tuple
    ids: list[int] | None = None


@dataclass(frozen=True)
class Request:
    """A generation request as read: its body, options and prompts (several for a list of
    prompts to /v1/completions)."""

    body: dict
    options: Options
    prompts: tuple[Prompt, ...]


@dataclass(frozen=True)
class ServedModel:
    """What a server reads requests with: its model's name, tokenizer, KV block size and context."""

    model: str
    tokenizer: tokens.Tokenizer
    block_size: int
    max_model_len: int


def json_object(raw: bytes) -> dict:
    """A request body's JSON object (ApiError 400 if it is none)."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise ApiError(400, "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def _check_model(body: dict, served_model: str) -> None:
    model = body.get("model")
    if model is not None and model != served_model:
        raise ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")


def read_request(raw: bytes, chat: bool, served: ServedModel) -> Request:
    """A /v1/completions (or, `chat`, /v1/chat/completions) body as the server takes it. Raises
    ApiError with vLLM's status and message."""
    body = json_object(raw)
    _check_model(body, served.model)
    try:
        options = read_options(body, chat)
    except FieldError as exc:
        raise ApiError(400, str(exc), param=exc.param) from None
    want_ids = options.return_token_ids or options.truncate is not None
    if chat:
        prompts = [chat_prompt(body, options, served, want_ids)]
    else:
        prompts = completion_prompt(body, options, served, want_ids)
    if options.truncate is not None:
        prompts = [_truncate(p, options, served) for p in prompts]
    return Request(body, options, tuple(prompts))


def completion_prompt(body: dict, options: Options, served: ServedModel, want_ids: bool = False) -> list[Prompt]:
    """A /v1/completions request's prompts, counted, with their prefix-cache identities."""
    try:
        prompts = tokens.completion_prompts(body)
    except tokens.PromptError as exc:
        raise ApiError(400, str(exc), param="prompt") from None
    out = []
    tok = served.tokenizer
    salt = options.cache_salt
    for p in prompts:
        if isinstance(p, list):
            out.append(Prompt(len(p), prompt_segments("ids", p, served.block_size, salt), p if want_ids else None))
            continue
        n = tok.prompt_tokens(p, options.add_special_tokens)
        ids = tok.encode(p, options.add_special_tokens) if want_ids else None
        out.append(Prompt(n, prompt_segments("text", [(p, n)], served.block_size, salt), ids))
    return out


def chat_prompt(body: dict, options: Options, served: ServedModel, want_ids: bool = False) -> Prompt:
    """A chat laid out by the model's template, counted, with its identity (message by message)."""
    tok = served.tokenizer
    template = tok.family.template
    if template is None:
        raise ApiError(400, "As of transformers v4.44, default chat template is no longer allowed, so you must "
                            "provide a chat template if the tokenizer does not define one.")
    try:
        parts = templates.render(template, body.get("messages"), options.add_generation_prompt,
                                 options.continue_final_message, options.date_string)
    except tokens.PromptError as exc:
        raise ApiError(400, str(exc), param="messages") from None
    counted = [(identity, text, tok.count(text)) for identity, text in parts]
    bos = 1 if options.add_special_tokens and tok.bos_id is not None else 0
    n = sum(c for _, _, c in counted) + bos
    segments = prompt_segments("chat", [(identity, c + (bos if i == 0 else 0))
                                        for i, (identity, _, c) in enumerate(counted)],
                               served.block_size, options.cache_salt)
    ids = tok.encode("".join(text for _, text, _ in counted), bool(bos)) if want_ids else None
    return Prompt(n, segments, ids)


def _truncate(p: Prompt, options: Options, served: ServedModel) -> Prompt:
    """vLLM's truncate_prompt_tokens: the prompt's last N tokens (first N, truncation_side right);
    -1 is the context less one token for the answer."""
    limit = options.truncate
    if limit > served.max_model_len:
        raise ApiError(400, f"truncate_prompt_tokens={limit} cannot be greater than max_model_len = "
                            f"{served.max_model_len}. Please request a smaller truncation size.",
                       param="truncate_prompt_tokens")
    if limit == -1:
        limit = served.max_model_len - 1
    if p.tokens <= limit:
        return p
    ids = p.ids[-limit:] if options.truncation_side == "left" else p.ids[:limit]
    return Prompt(len(ids), prompt_segments("ids", ids, served.block_size, options.cache_salt), ids)


async def read(request: web.Request, reader, *args):
    """`reader(body, *args)` of the request's body, read within the server's limits: in a thread
    when the body is long, so that its JSON and its tokens do not hold up the streams being written."""
    raw = await read_body(request, request.app[LIMITS])
    if len(raw) < THREAD_BODY_BYTES:
        return reader(raw, *args)
    return await asyncio.to_thread(reader, raw, *args)


def _served(app) -> ServedModel:
    engine = app[PACER].engine
    return ServedModel(app[MODEL], app[TOKENIZER], engine.pool.block_size, engine.config.max_model_len)


def max_tokens(options: Options, prompt_len: int, max_model_len: int) -> int:
    """The answer's longest length, as vLLM 0.33 sets it: the prompt within max_model_len, the
    asked max_tokens at most max_model_len, then cut to what the context leaves."""
    if prompt_len > max_model_len:
        raise ApiError(400, f"This model's maximum context length is {max_model_len} tokens. However, your prompt "
                            f"contains {prompt_len} input tokens, which exceeds this limit even without any output "
                            "tokens. Please reduce the length of the input prompt.", param="input_tokens")
    asked = options.max_tokens
    if asked is not None and asked > max_model_len:
        raise ApiError(400, f"{options.max_tokens_param}={asked} cannot be greater than max_model_len="
                            f"{max_model_len}. Please request fewer output tokens.", param=options.max_tokens_param)
    value = max_model_len - prompt_len if asked is None else min(asked, max_model_len - prompt_len)
    if value < 1:
        raise ApiError(400, f"max_tokens must be at least 1, got {value}.", param="max_tokens")
    if options.min_tokens > value:
        raise ApiError(400, f"min_tokens must be less than or equal to max_tokens={value}, got "
                            f"{options.min_tokens}.", param="min_tokens")
    return value


@dataclass
class Choice:
    """One choice of a response: its request in the engine and how its answer ends."""

    index: int
    prompt: Prompt
    stream: Stream
    answer: tokens.Answer
    sent: int = 0  # tokens written to the client so far


def _queue(request: web.Request, req: Request) -> list[Choice]:
    """Every choice of the request, checked and queued on the engine (all or none)."""
    app = request.app
    pacer = app[PACER]
    engine = pacer.engine
    o = req.options
    plans = []
    for p in req.prompts:
        limit = max_tokens(o, p.tokens, engine.config.max_model_len)
        answer = tokens.plan_answer(limit, o.min_tokens, o.stop, o.stop_token_ids, o.include_stop)
        try:
            pacer.check(p.tokens, answer.tokens)
        except RequestRejected as exc:
            raise ApiError(400, "the simulated server could never serve this request: "
                                f"{exc.spelled_reason(flag_of)}") from None
        plans.append((p, limit, answer))
    priority = o.priority if engine.config.scheduling_policy == "priority" else 0
    changed = asyncio.Event()
    choices = []
    key = uuid.uuid4().hex
    for i, (p, limit, answer) in enumerate(plans):
        for j in range(o.n):
            stream = pacer.submit(p.tokens, answer.tokens, p.segments, streaming=o.stream, priority=priority,
                                  changed=changed, interval=o.stream_interval, reason=answer.reason,
                                  stop_reason=answer.stop_reason, max_tokens=limit, n=o.n, group=(key, i))
            choices.append(Choice(i * o.n + j, p, stream, answer))
    return choices


def _request_id(request: web.Request, options: Options, chat: bool) -> str:
    rid = request.headers.get("X-Request-Id") or options.request_id or uuid.uuid4().hex
    return f"{'chatcmpl' if chat else 'cmpl'}-{rid}"


async def completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, chat=False)


async def chat_completions(request: web.Request) -> web.StreamResponse:
    return await _generate(request, chat=True)


async def _generate(request: web.Request, chat: bool) -> web.StreamResponse:
    req = await read(request, read_request, chat, _served(request.app))
    choices = _queue(request, req)
    pacer = request.app[PACER]
    try:
        if req.options.stream:
            return await _stream(request, req, choices, chat)
        changed = choices[0].stream.changed
        while not all(c.stream.done for c in choices):
            changed.clear()
            await changed.wait()
        if any(c.stream.finish_reason == "abort" for c in choices):  # (the server is stopping)
            raise ApiError(503, "the server stopped before this request finished", "ServiceUnavailableError")
        return web.json_response(_whole(request, req, choices, chat))
    except (asyncio.CancelledError, ConnectionResetError):
        for c in choices:
            pacer.abort(c.stream)  # the client went away
        raise
    finally:
        for c in choices:
            if not c.stream.done:
                pacer.abort(c.stream)


def _usage(req: Request, choices: list[Choice], caching: bool) -> dict:
    """vLLM's usage: each prompt once, every choice's tokens, the prompts' cached tokens."""
    prompt = sum(p.tokens for p in req.prompts)
    done = sum(c.stream.tokens for c in choices)
    usage = {"prompt_tokens": prompt, "total_tokens": prompt + done, "completion_tokens": done,
             "prompt_tokens_details": None}
    if caching:
        n = req.options.n
        usage["prompt_tokens_details"] = {"cached_tokens": sum(choices[i].stream.cached_tokens
                                                               for i in range(0, len(choices), n))}
    return usage


def _token_str(tid: int, as_ids: bool) -> str:
    return f"token_id:{tid}" if as_ids else tokens.id_piece(tid)


def _logprobs(c: Choice, start: int, end: int, o: Options, chat: bool, offset: int = 0):
    """vLLM's logprobs of a choice's tokens `start` to `end`: each the filler's token, logprob
    0.0 (probability 1), its only alternative itself."""
    if o.logprobs is None:
        return None
    ids = [tokens.WORD_IDS[i % len(tokens.WORDS)] for i in range(start, end)]
    strs = [_token_str(t, o.as_token_ids) for t in ids]
    if chat:
        def entry(s: str) -> dict:
            return {"token": s, "logprob": 0.0, "bytes": list(s.encode())}

        return {"content": [{**entry(s), "top_logprobs": [entry(s)] if o.logprobs else []} for s in strs]}
    offsets = []
    at = offset
    for i in range(start, end):
        offsets.append(at)
        at += len(tokens.filler_word(i))
    return {"text_offset": offsets, "token_logprobs": [0.0] * len(strs), "tokens": strs,
            "top_logprobs": [{s: 0.0} for s in strs]}


def _whole(request: web.Request, req: Request, choices: list[Choice], chat: bool) -> dict:
    app = request.app
    o = req.options
    caching = app[PACER].engine.pool.caching
    out = []
    for c in choices:
        s = c.stream
        text = c.answer.text(0, s.tokens)
        reason = s.finish_reason
        stop_reason = s.stop_reason if reason == "stop" else None
        logprobs = _logprobs(c, 0, s.tokens, o, chat)
        if chat:
            choice = {"index": c.index, "message": {"role": "assistant", "content": text, "refusal": None,
                                                    "annotations": None, "audio": None, "function_call": None,
                                                    "tool_calls": [], "reasoning_content": None},
                      "logprobs": logprobs, "finish_reason": reason, "stop_reason": stop_reason}
        else:
            choice = {"index": c.index, "text": text, "logprobs": logprobs, "finish_reason": reason,
                      "stop_reason": stop_reason, "prompt_logprobs": None}
        if o.return_token_ids:
            choice["token_ids"] = [tokens.WORD_IDS[i % len(tokens.WORDS)] for i in range(s.tokens)]
            if not chat:
                choice["prompt_token_ids"] = c.prompt.ids
        out.append(choice)
    response = {"id": _request_id(request, o, chat), "object": "chat.completion" if chat else "text_completion",
                "created": int(time.time()), "model": app[MODEL], "choices": out,
                "usage": _usage(req, choices, caching)}
    if chat:
        response["prompt_logprobs"] = None
        if o.return_token_ids:
            response["prompt_token_ids"] = req.prompts[0].ids
    response["kv_transfer_params"] = None
    return response


async def _stream(request: web.Request, req: Request, choices: list[Choice], chat: bool) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8",
                                           "Cache-Control": "no-cache"})
    try:
        await response.prepare(request)
        await _stream_events(request, response, req, choices, chat)
    except ConnectionResetError:
        # The client went away while an event was being written: its request is aborted, and
        # the answer ends here (aiohttp ignores a closed connection at the end of a response;
        # raised further, the disconnect would be logged as a server error with a traceback).
        for c in choices:
            request.app[PACER].abort(c.stream)
    return response


async def _stream_events(request: web.Request, response: web.StreamResponse, req: Request,
                         choices: list[Choice], chat: bool) -> None:
    app = request.app
    o = req.options
    caching = app[PACER].engine.pool.caching
    head = {"id": _request_id(request, o, chat), "object": "chat.completion.chunk" if chat else "text_completion",
            "created": int(time.time()), "model": app[MODEL]}
    changed = choices[0].stream.changed

    async def send(data) -> None:
        await response.write(b"data: " + json.dumps(data).encode() + b"\n\n")

    # A plain chunk in the middle of a choice is the same bytes but its text: made once a choice,
    # the text put in between (the filler words need no JSON escaping).
    plain = o.logprobs is None and not o.return_token_ids and not o.continuous_usage
    frames: dict[int, tuple[bytes, bytes]] = {}

    def frame(index: int) -> tuple[bytes, bytes]:
        if index not in frames:
            choice = ({"index": index, "delta": {"content": "\x00"}, "logprobs": None, "finish_reason": None}
                      if chat else {"index": index, "text": "\x00", "logprobs": None, "finish_reason": None,
                                    "stop_reason": None})
            data = ("data: " + json.dumps({**head, "choices": [choice]}) + "\n\n").encode()
            frames[index] = tuple(data.split(b"\\u0000"))
        return frames[index]

    def usage_of(c: Choice) -> dict:
        return {"prompt_tokens": c.prompt.tokens, "total_tokens": c.prompt.tokens + c.sent,
                "completion_tokens": c.sent}

    pending = list(choices)
    while pending:
        while not any(c.stream.tokens > c.sent or c.stream.done for c in pending):
            changed.clear()
            await changed.wait()
        if any(c.stream.finish_reason == "abort" for c in pending):
            break
        for c in list(pending):
            s = c.stream
            n = s.tokens
            if n == c.sent and not s.done:
                continue
            first = c.sent == 0
            if chat and first:
                delta = {"role": "assistant", "content": ""}
                chunk = {**head, "choices": [{"index": c.index, "delta": delta, "logprobs": None,
                                              "finish_reason": None}]}
                if o.return_token_ids:
                    chunk["prompt_token_ids"] = c.prompt.ids
                await send(chunk)
            text = c.answer.text(c.sent, n)
            done = s.done
            if plain and not done and not (chat and first):
                before, after = frame(c.index)
                await response.write(before + text.encode() + after)
                c.sent = n
                continue
            reason = s.finish_reason if done else None
            logprobs = _logprobs(c, c.sent, n, o, chat, len(c.answer.text(0, c.sent)))
            if chat:
                choice = {"index": c.index, "delta": {"content": text}, "logprobs": logprobs,
                          "finish_reason": reason}
                if done:
                    choice["stop_reason"] = s.stop_reason if reason == "stop" else None
            else:
                choice = {"index": c.index, "text": text, "logprobs": logprobs, "finish_reason": reason,
                          "stop_reason": s.stop_reason if reason == "stop" else None}
                if o.return_token_ids and first:
                    choice["prompt_token_ids"] = c.prompt.ids
            if o.return_token_ids:
                choice["token_ids"] = [tokens.WORD_IDS[i % len(tokens.WORDS)] for i in range(c.sent, n)]
            c.sent = n
            chunk = {**head, "choices": [choice]}
            if o.continuous_usage:
                chunk["usage"] = usage_of(c)
            await send(chunk)
            if done:
                pending.remove(c)
    if o.include_usage and not pending:
        await send({**head, "choices": [], "usage": _usage(req, choices, caching)})
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()


# -- /tokenize and /detokenize ------------------------------------------------------------------------

def read_tokenize(raw: bytes, served: ServedModel) -> dict:
    """A /tokenize body (vLLM's TokenizeCompletionRequest: a prompt; TokenizeChatRequest:
    messages) as vLLM's TokenizeResponse."""
    body = json_object(raw)
    _check_model(body, served.model)
    tok = served.tokenizer
    try:
        strs = tokens.flag(body.get("return_token_strs"), "return_token_strs")
        if "messages" in body:
            if body.get("tools"):
                raise ApiError(400, "tools: not served by batchtui's simulated engine: tool calling cannot be "
                                    "simulated", param="tools")
            if body.get("chat_template") is not None:
                raise ApiError(400, "chat_template: not served by batchtui's simulated engine: batchtui lays out "
                                    "only the templates it knows", param="chat_template")
            options = read_options({k: body[k] for k in ("add_generation_prompt", "continue_final_message",
                                                         "add_special_tokens", "chat_template_kwargs")
                                    if k in body}, chat=True)
            prompt = chat_prompt(body, options, served, want_ids=True)
            ids = prompt.ids
        else:
            text = body.get("prompt")
            if not isinstance(text, str):
                raise ApiError(400, "prompt: Input should be a valid string", param="prompt")
            add = tokens.flag(body.get("add_special_tokens", True), "add_special_tokens") is not False
            ids = tok.encode(text, add)
    except (tokens.PromptError, FieldError) as exc:
        raise ApiError(400, str(exc), param=getattr(exc, "param", None)) from None
    return {"count": len(ids), "max_model_len": served.max_model_len, "tokens": ids,
            "token_strs": tok.token_strs(ids) if strs else None}


def read_detokenize(raw: bytes, served: ServedModel) -> dict:
    """A /detokenize body (vLLM's DetokenizeRequest: tokens) as vLLM's DetokenizeResponse."""
    body = json_object(raw)
    _check_model(body, served.model)
    ids = body.get("tokens")
    if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise ApiError(400, "tokens: Input should be a valid list of integers", param="tokens")
    try:
        return {"prompt": served.tokenizer.decode(ids)}
    except tokens.TokenError as exc:
        raise ApiError(400, str(exc), param="tokens") from None


async def tokenize(request: web.Request) -> web.Response:
    return web.json_response(await read(request, read_tokenize, _served(request.app)))


async def detokenize(request: web.Request) -> web.Response:
    return web.json_response(await read(request, read_detokenize, _served(request.app)))
