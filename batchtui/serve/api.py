"""The HTTP side: vLLM's OpenAI-compatible routes, answered as vLLM answers them (response
shapes of vllm/entrypoints/openai/protocol.py; errors as its ErrorResponse).

The prompt is counted (`tokens`), checked against max_model_len with vLLM's messages, and queued
on the one engine (`pacer`); the answer is filler text whose tokens come out when the simulated
GPU produces them: streamed over server-sent events, one event per iteration's worth of tokens,
or whole at the end. A client that goes away (its connection closes) aborts its request: the
engine frees its blocks.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid

from aiohttp import web

from sim.dials import flag_of
from sim.errors import RequestRejected

from . import tokens
from .pacer import Pacer, Stream, prompt_segments
from .prom import CONTENT_TYPE, ServerMetrics

PACER = web.AppKey("pacer", Pacer)
METRICS = web.AppKey("metrics", ServerMetrics)
MODEL = web.AppKey("model", str)


class ApiError(Exception):
    """An error answered in vLLM's ErrorResponse shape."""

    def __init__(self, status: int, message: str, kind: str = "BadRequestError", param: str | None = None):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.param = param


def error_response(exc: ApiError) -> web.Response:
    body = {"error": {"message": str(exc), "type": exc.kind, "param": exc.param, "code": exc.status}}
    return web.json_response(body, status=exc.status)


def make_app(pacer: Pacer, metrics: ServerMetrics, model: str) -> web.Application:
    app = web.Application(middlewares=[_errors], client_max_size=64 * 1024 * 1024)
    app[PACER] = pacer
    app[METRICS] = metrics
    app[MODEL] = model
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


async def _body(request: web.Request) -> dict:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        raise ApiError(400, "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    model = body.get("model")
    served = request.app[MODEL]
    if model is not None and model != served:
        raise ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
    if body.get("n", 1) not in (1, None):
        raise ApiError(400, "n: only n = 1 is served here", param="n")
    return body


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


def _queue(request: web.Request, body: dict, prompt_len: int, output_len: int, segments) -> Stream:
    pacer = request.app[PACER]
    try:
        pacer.check(prompt_len, output_len)
    except RequestRejected as exc:
        raise ApiError(400, f"the simulated server could never serve this request: {exc.spelled_reason(flag_of)}") from None
    return pacer.submit(prompt_len, output_len, segments, streaming=bool(body.get("stream")))


def _usage(stream: Stream, caching: bool) -> dict:
    usage = {"prompt_tokens": stream.prompt_len, "total_tokens": stream.prompt_len + stream.tokens,
             "completion_tokens": stream.tokens, "prompt_tokens_details": None}
    if caching:
        usage["prompt_tokens_details"] = {"cached_tokens": stream.cached_tokens}
    return usage


async def completions(request: web.Request) -> web.StreamResponse:
    body = await _body(request)
    pacer = request.app[PACER]
    engine = pacer.engine
    try:
        prompt_len = tokens.completion_prompt_tokens(body)
    except tokens.PromptError as exc:
        raise ApiError(400, str(exc), param="prompt") from None
    output_len = _max_tokens(body, ("max_tokens",), prompt_len, engine.config.max_model_len)
    ids = body.get("prompt_token_ids") or body.get("prompt")
    if isinstance(ids, list) and len(ids) == 1 and isinstance(ids[0], (list, str)):
        ids = ids[0]
    if isinstance(ids, list):
        segments = prompt_segments("ids", ids, engine.pool.block_size)
    else:
        segments = prompt_segments("text", [(ids, prompt_len)], engine.pool.block_size)
    stream = _queue(request, body, prompt_len, output_len, segments)
    return await _answer(request, body, stream, chat=False)


async def chat_completions(request: web.Request) -> web.StreamResponse:
    body = await _body(request)
    pacer = request.app[PACER]
    engine = pacer.engine
    try:
        parts = tokens.chat_parts(body)
    except tokens.PromptError as exc:
        raise ApiError(400, str(exc), param="messages") from None
    prompt_len = sum(n for _, n in parts)
    output_len = _max_tokens(body, ("max_completion_tokens", "max_tokens"), prompt_len,
                             engine.config.max_model_len)
    stream = _queue(request, body, prompt_len, output_len, prompt_segments("chat", parts, engine.pool.block_size))
    return await _answer(request, body, stream, chat=True)


async def _answer(request: web.Request, body: dict, stream: Stream, chat: bool) -> web.StreamResponse:
    pacer = request.app[PACER]
    try:
        if body.get("stream"):
            return await _stream(request, body, stream, chat)
        while not stream.done:
            stream.changed.clear()
            await stream.changed.wait()
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


async def _stream(request: web.Request, body: dict, stream: Stream, chat: bool) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8",
                                           "Cache-Control": "no-cache"})
    try:
        await response.prepare(request)
        await _stream_events(request, response, body, stream, chat)
    except ConnectionResetError:
        # The client went away while an event was being written: its request is aborted, and
        # the answer ends here (aiohttp ignores a closed connection at the end of a response;
        # raised further, the disconnect would be logged as a server error with a traceback).
        request.app[PACER].abort(stream)
    return response


async def _stream_events(request: web.Request, response: web.StreamResponse, body: dict, stream: Stream,
                         chat: bool) -> None:
    app = request.app
    caching = app[PACER].engine.pool.caching
    options = body.get("stream_options") or {}
    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
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
