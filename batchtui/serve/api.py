"""The HTTP side: vLLM's OpenAI-compatible routes, answered as vLLM answers them (response
shapes of vllm/entrypoints/openai/protocol.py; errors as its ErrorResponse).

A request's body is read within the server's limits (`guard.read_body`: 413, 408), then read as
a request (`read_request`: JSON, the model, the prompt counted by `tokens`, its prefix-cache
identity), in a thread when the body is long so that live streams keep flowing; the prompt is
checked against max_model_len with vLLM's messages and queued on the one engine (`pacer`). The
answer is filler text whose tokens come out when the simulated GPU produces them: streamed over
server-sent events, one event per iteration's worth of tokens, or whole at the end. A client that
goes away (its connection closes) aborts its request: the engine frees its blocks.
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

from . import tokens
from .guard import BodyError, Connections, Limits, error_payload, read_body
from .pacer import Pacer, Stream, prompt_segments
from .prom import CONTENT_TYPE, ServerMetrics

PACER = web.AppKey("pacer", Pacer)
METRICS = web.AppKey("metrics", ServerMetrics)
MODEL = web.AppKey("model", str)
LIMITS = web.AppKey("limits", Limits)

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
             connections: Connections | None = None) -> web.Application:
    """The application; `connections` (the guard of its listening socket) hears which connections
    are in a request."""
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
    app.router.add_get("/health", health)
    app.router.add_get("/ping", health)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/metrics", prometheus)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", chat_completions)
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
    """A request as read: its body, its prompt's tokens and prefix-cache identity, and how it is
    answered."""

    body: dict
    tokens: int
    segments: tuple
    stream: bool
    include_usage: bool


def json_object(raw: bytes) -> dict:
    """A request body's JSON object (ApiError 400 if it is none)."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise ApiError(400, "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def read_request(raw: bytes, chat: bool, served_model: str, block_size: int) -> Prompt:
    """A /v1/completions (or, `chat`, /v1/chat/completions) body as the server takes it. Raises
    ApiError with vLLM's status and message."""
    body = json_object(raw)
    model = body.get("model")
    if model is not None and model != served_model:
        raise ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
    if body.get("n", 1) not in (1, None):
        raise ApiError(400, "n: only n = 1 is served here", param="n")
    try:
        stream = bool(tokens.flag(body.get("stream"), "stream"))
        options = body.get("stream_options")
        include_usage = False
        if isinstance(options, dict):  # (vLLM's StreamOptions: include_usage defaults to true)
            include_usage = tokens.flag(options.get("include_usage", True), "stream_options.include_usage")
    except tokens.PromptError as exc:
        raise ApiError(400, str(exc), param=str(exc).split(":")[0]) from None
    prompt_len, segments = (chat_prompt if chat else completion_prompt)(body, block_size)
    return Prompt(body, prompt_len, segments, stream, bool(include_usage))


def completion_prompt(body: dict, block_size: int) -> tuple[int, tuple]:
    """A /v1/completions prompt's tokens and prefix-cache identity (ApiError if it has none)."""
    try:
        prompt_len = tokens.completion_prompt_tokens(body)
    except tokens.PromptError as exc:
        raise ApiError(400, str(exc), param="prompt") from None
    ids = body.get("prompt_token_ids") or body.get("prompt")
    if isinstance(ids, list) and len(ids) == 1 and isinstance(ids[0], (list, str)):
        ids = ids[0]
    if isinstance(ids, list):
        return prompt_len, prompt_segments("ids", ids, block_size)
    return prompt_len, prompt_segments("text", [(ids, prompt_len)], block_size)


def chat_prompt(body: dict, block_size: int) -> tuple[int, tuple]:
    """A chat's tokens once its template formats it, and its prefix-cache identity (ApiError if
    its messages cannot be counted)."""
    try:
        parts = tokens.chat_parts(body)
    except tokens.PromptError as exc:
        raise ApiError(400, str(exc), param="messages") from None
    return sum(n for _, n in parts), prompt_segments("chat", parts, block_size)


async def read(request: web.Request, reader, *args):
    """`reader(body, *args)` of the request's body, read within the server's limits: in a thread
    when the body is long, so that its JSON and its tokens do not hold up the streams being written."""
    raw = await read_body(request, request.app[LIMITS])
    if len(raw) < THREAD_BODY_BYTES:
        return reader(raw, *args)
    return await asyncio.to_thread(reader, raw, *args)


async def _prompt(request: web.Request, chat: bool) -> Prompt:
    app = request.app
    return await read(request, read_request, chat, app[MODEL], app[PACER].engine.pool.block_size)


def _max_tokens(body: dict, names: tuple[str, ...], prompt_len: int, max_model_len: int) -> int:
    """The answer's length: max_tokens (vLLM's check and message), or what the context leaves."""
    if prompt_len >= max_model_len:
        raise ApiError(400, f"This model's maximum context length is {max_model_len} tokens. However, your "
                            f"request has {prompt_len} input tokens. Please reduce the length of the input "
                            "messages.")
    value = next((body[n] for n in names if body.get(n) is not None), None)
    if value is None:
        return max_model_len - prompt_len
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ApiError(400, f"max_tokens must be at least 1, got {value!r}.", param="max_tokens")
    if value > max_model_len - prompt_len:
        raise ApiError(400, f"'max_tokens' or 'max_completion_tokens' is too large: {value}. This model's "
                            f"maximum context length is {max_model_len} tokens and your request has "
                            f"{prompt_len} input tokens ({value} > {max_model_len} - {prompt_len}).")
    return value


def _queue(request: web.Request, prompt: Prompt, output_len: int) -> Stream:
    pacer = request.app[PACER]
    try:
        pacer.check(prompt.tokens, output_len)
    except RequestRejected as exc:
        raise ApiError(400, f"the simulated server could never serve this request: {exc.spelled_reason(flag_of)}") from None
    return pacer.submit(prompt.tokens, output_len, prompt.segments, streaming=prompt.stream)


def _usage(stream: Stream, caching: bool) -> dict:
    usage = {"prompt_tokens": stream.prompt_len, "total_tokens": stream.prompt_len + stream.tokens,
             "completion_tokens": stream.tokens, "prompt_tokens_details": None}
    if caching:
        usage["prompt_tokens_details"] = {"cached_tokens": stream.cached_tokens}
    return usage


async def completions(request: web.Request) -> web.StreamResponse:
    prompt = await _prompt(request, chat=False)
    output_len = _max_tokens(prompt.body, ("max_tokens",), prompt.tokens,
                             request.app[PACER].engine.config.max_model_len)
    return await _answer(request, prompt, _queue(request, prompt, output_len), chat=False)


async def chat_completions(request: web.Request) -> web.StreamResponse:
    prompt = await _prompt(request, chat=True)
    output_len = _max_tokens(prompt.body, ("max_completion_tokens", "max_tokens"), prompt.tokens,
                             request.app[PACER].engine.config.max_model_len)
    return await _answer(request, prompt, _queue(request, prompt, output_len), chat=True)


async def _answer(request: web.Request, prompt: Prompt, stream: Stream, chat: bool) -> web.StreamResponse:
    pacer = request.app[PACER]
    try:
        if prompt.stream:
            return await _stream(request, prompt, stream, chat)
        while not stream.done:
            stream.changed.clear()
            await stream.changed.wait()
        if stream.finish_reason == "abort":  # (the server is stopping)
            raise ApiError(503, "the server stopped before this request finished", "ServiceUnavailableError")
        return web.json_response(_whole(request, stream, chat))
    except (asyncio.CancelledError, ConnectionResetError):
        pacer.abort(stream)  # the client went away
        raise
    finally:
        if not stream.done:
            pacer.abort(stream)


def _whole(request: web.Request, stream: Stream, chat: bool) -> dict:
    app = request.app
    text = tokens.filler(0, stream.tokens)
    caching = app[PACER].engine.pool.caching
    created = int(time.time())
    if chat:
        choice = {"index": 0, "message": {"role": "assistant", "content": text, "refusal": None, "annotations": None,
                                          "audio": None, "function_call": None, "tool_calls": [],
                                          "reasoning_content": None},
                  "logprobs": None, "finish_reason": "length", "stop_reason": None}
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": created,
                "model": app[MODEL], "choices": [choice], "usage": _usage(stream, caching),
                "prompt_logprobs": None, "kv_transfer_params": None}
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "length", "stop_reason": None,
              "prompt_logprobs": None}
    return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": created,
            "model": app[MODEL], "choices": [choice], "usage": _usage(stream, caching),
            "kv_transfer_params": None}


async def _stream(request: web.Request, prompt: Prompt, stream: Stream, chat: bool) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8",
                                           "Cache-Control": "no-cache"})
    try:
        await response.prepare(request)
        await _stream_events(request, response, prompt, stream, chat)
    except ConnectionResetError:
        # The client went away while an event was being written: its request is aborted, and
        # the answer ends here (aiohttp ignores a closed connection at the end of a response;
        # raised further, the disconnect would be logged as a server error with a traceback).
        request.app[PACER].abort(stream)
    return response


async def _stream_events(request: web.Request, response: web.StreamResponse, prompt: Prompt, stream: Stream,
                         chat: bool) -> None:
    app = request.app
    caching = app[PACER].engine.pool.caching
    include_usage = prompt.include_usage
    head = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}",
            "object": "chat.completion.chunk" if chat else "text_completion",
            "created": int(time.time()), "model": app[MODEL]}

    async def send(data) -> None:
        await response.write(b"data: " + json.dumps(data).encode() + b"\n\n")

    # A token's event is the same bytes but its text: made once, the text put in between (the
    # filler words need no JSON escaping).
    if chat:
        ongoing = {**head, "choices": [{"index": 0, "delta": {"content": "\x00"}, "logprobs": None,
                                        "finish_reason": None}]}
    else:
        ongoing = {**head, "choices": [{"index": 0, "text": "\x00", "logprobs": None, "finish_reason": None,
                                        "stop_reason": None}]}
    before, after = ("data: " + json.dumps(ongoing) + "\n\n").encode().split(b"\\u0000")
    sent = 0
    while True:
        while stream.tokens == sent and not stream.done:
            stream.changed.clear()
            await stream.changed.wait()
        if stream.finish_reason == "abort":
            break
        n = stream.tokens
        if chat and sent == 0:
            await send({**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                             "logprobs": None, "finish_reason": None}]})
        text = tokens.filler(sent, n - sent)
        sent = n
        if not stream.done:
            await response.write(before + text.encode() + after)
            continue
        if chat:
            choice = {"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": "length"}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "length", "stop_reason": None}
        await send({**head, "choices": [choice]})
        break
    if include_usage and stream.done:
        await send({**head, "choices": [], "usage": _usage(stream, caching)})
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
