"""One client session to an OpenAI-compatible server, measuring each answer as `vllm bench serve`
measures it (vLLM 0.33, `vllm/benchmarks/lib/endpoint_request_func.py`):

- a request is streamed (`"stream": true` with `stream_options.include_usage`), its clock started
  just before it is sent;
- TTFT is the time to the first server-sent event carrying output (for a completion, any event
  with `choices`; for a chat, a delta with content, not the opening `role` event);
- each later event with output adds one inter-token gap (ITL), however many tokens it carries;
- the latency ends at the last event with output; the output and prompt token counts are the
  server's own (`usage.completion_tokens`, `usage.prompt_tokens`);
- a request fails when the answer is not HTTP 200 or ends before its first output; the error is
  kept in one line (the server's message for an HTTP error, "connection refused", "the server
  closed the connection after N events"...).

Times are real seconds (`time.perf_counter`); scaling them (a server at a `--time-scale`) is the
caller's business.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from dataclasses import dataclass, field

import aiohttp

BACKENDS = {"openai": "completions", "vllm": "completions", "openai-chat": "chat"}
"""vllm bench serve's backends this client speaks, and the API each one calls."""
DEFAULT_ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
ENDPOINT_SUFFIX = {"completions": "completions", "chat": "chat/completions"}
TIMEOUT_S = 6 * 60 * 60
"""A request's total time limit: vllm bench serve's (AIOHTTP_TIMEOUT, six hours)."""
KEEP_ALIVE_S = 4.0
"""How long an idle connection is kept for the next request: under the 5 s after which vLLM's
server (uvicorn's default, `--timeout-keep-alive`) and `batchtui serve` close one, so a request is
never sent on a connection the server is closing."""
PROBE_TIMEOUT_S = 30.0
"""Time limit of the short calls made around a run (/v1/models, /tokenize, /metrics)."""


@dataclass
class Endpoint:
    """Where and how requests are sent."""

    base_url: str
    """http://host:port (no trailing slash)."""
    path: str = "/v1/completions"
    backend: str = "openai"
    model: str = ""
    """The model name each request carries."""
    headers: dict = field(default_factory=dict)
    extra_body: dict = field(default_factory=dict)
    """Fields added to every request's body (sampling parameters, logprobs, --extra-body)."""
    ignore_eos: bool = False
    insecure: bool = False

    @property
    def api(self) -> str:
        return BACKENDS[self.backend]

    @property
    def url(self) -> str:
        return self.base_url + self.path


@dataclass
class Outcome:
    """What the client saw of one request (vLLM's RequestFuncOutput, in real seconds)."""

    success: bool = False
    error: str = ""
    start: float = 0.0
    """perf_counter when it was sent."""
    ttft: float = 0.0
    itl: list[float] = field(default_factory=list)
    latency: float = 0.0
    output_tokens: int = 0
    """The server's usage.completion_tokens (0 when it sent no usage)."""
    prompt_tokens: int | None = None
    """The server's usage.prompt_tokens (None when it sent no usage)."""
    generated_text: str = ""
    server_queue_time: float | None = None
    server_ttft: float | None = None


class ServerUnreachable(Exception):
    """The server cannot be reached at all (the message says why, in one line)."""


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def connection_error(exc: BaseException, where: str) -> str:
    """An aiohttp failure in one line, naming `where` (host:port)."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        error = getattr(exc, "os_error", None)
        if isinstance(error, socket.gaierror):  # (its errno is getaddrinfo's, not one os.strerror knows)
            return f"cannot connect to {where} (no such host: {one_line(error.strerror or error).lower()})"
        why = (os.strerror(error.errno) if error is not None and error.errno else
               error.strerror if error is not None and error.strerror else str(exc))
        return f"cannot connect to {where} ({one_line(why).lower()})"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return f"{where} closed the connection"
    if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return f"{where} did not answer in time"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return f"{where} broke off the answer"
    return f"{where}: {type(exc).__name__}: {one_line(exc)}"


def _headers(endpoint: Endpoint, request_id: str | None) -> dict:
    headers = {"Content-Type": "application/json"}
    key = os.environ.get("OPENAI_API_KEY")  # as vllm bench serve sends it
    if key:
        headers["Authorization"] = f"Bearer {key}"
    headers.update(endpoint.headers)
    if request_id:
        headers["x-request-id"] = request_id
    return headers


async def _error_message(response: aiohttp.ClientResponse) -> str:
    """`HTTP 400: <the server's message>` (vLLM's ErrorResponse shape, or the reason)."""
    message = response.reason or ""
    try:
        body = await response.read()
        data = json.loads(body)
        if isinstance(data, dict):
            err = data.get("error", data)
            if isinstance(err, dict) and err.get("message"):
                message = str(err["message"])
            elif isinstance(data.get("message"), str):
                message = data["message"]
            elif isinstance(data.get("detail"), str):
                message = data["detail"]
    except (ValueError, aiohttp.ClientError, asyncio.TimeoutError):
        pass
    return one_line(f"HTTP {response.status}: {message}")


def _events(buffer: bytearray) -> list[bytes]:
    """Complete server-sent events taken off the front of `buffer` (each the data of one event)."""
    out = []
    while True:
        end = buffer.find(b"\n\n")
        if end < 0:
            return out
        event = bytes(buffer[:end])
        del buffer[:end + 2]
        data = [line[5:].lstrip() for line in event.replace(b"\r", b"").split(b"\n") if line.startswith(b"data:")]
        if data:
            out.append(b"\n".join(data))


def _has_output(api: str, data: dict) -> tuple[bool, str]:
    """Whether an event carries output (vLLM's rule for the API), and its text."""
    choices = data.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        return False, ""
    choice = choices[0]
    if api == "completions":
        return True, choice.get("text") or ""
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return False, ""
    content = delta.get("content")
    if content or delta.get("reasoning") or delta.get("tool_calls") or delta.get("function_call"):
        return True, content or ""
    # A token may decode to "" (a special token): such a delta has content and no role.
    return content == "" and "role" not in delta, ""


class Client:
    """An aiohttp session to one server; use as an async context manager. `limit` caps the
    connections (0: none), as vllm bench serve caps them at --max-concurrency."""

    def __init__(self, endpoint: Endpoint, limit: int = 0) -> None:
        self.endpoint = endpoint
        self.limit = limit
        self.session: aiohttp.ClientSession | None = None
        host = endpoint.base_url.split("://", 1)[-1]
        self.where = host.split("/", 1)[0]

    async def __aenter__(self) -> Client:
        connector = aiohttp.TCPConnector(limit=self.limit, limit_per_host=self.limit, keepalive_timeout=KEEP_ALIVE_S,
                                         ssl=False if self.endpoint.insecure else None)
        self.session = aiohttp.ClientSession(connector=connector, trust_env=True,
                                             timeout=aiohttp.ClientTimeout(total=TIMEOUT_S))
        return self

    async def __aexit__(self, *exc) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None

    # -- short calls around a run
    async def _get(self, path: str) -> aiohttp.ClientResponse:
        timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT_S)
        try:
            response = await self.session.get(self.endpoint.base_url + path, timeout=timeout,
                                              headers=_headers(self.endpoint, None))
            await response.read()
            return response
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise ServerUnreachable(connection_error(exc, self.where)) from None

    async def models(self) -> list[str] | None:
        """The model names /v1/models lists (None: the server has no such route)."""
        response = await self._get("/v1/models")
        if response.status == 404:
            return None
        if response.status != 200:
            raise ServerUnreachable(f"{self.where}/v1/models: {await _error_message(response)}")
        try:
            data = json.loads(await response.read())
            return [str(card["id"]) for card in data["data"]]
        except (ValueError, KeyError, TypeError):
            raise ServerUnreachable(f"{self.where}/v1/models: not a list of models") from None

    async def metrics_text(self) -> str | None:
        """/metrics as text (None: the server has none)."""
        try:
            response = await self._get("/metrics")
        except ServerUnreachable:
            return None
        if response.status != 200:
            return None
        return (await response.read()).decode("utf-8", "replace")

    async def tokenize(self, text: str, add_special_tokens: bool = False) -> int | None:
        """How many tokens the server's /tokenize counts in `text` (vLLM's route: {"model",
        "prompt", "add_special_tokens"} -> {"count", "max_model_len", "tokens"}); None when the
        server has no such route or answers it otherwise."""
        body = {"model": self.endpoint.model, "prompt": text, "add_special_tokens": add_special_tokens}
        try:
            async with self.session.post(self.endpoint.base_url + "/tokenize", json=body,
                                         headers=_headers(self.endpoint, None),
                                         timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT_S)) as response:
                if response.status != 200:
                    return None
                data = json.loads(await response.read())
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            return None
        count = data.get("count") if isinstance(data, dict) else None
        if isinstance(count, int) and not isinstance(count, bool):
            return count
        tokens = data.get("tokens") if isinstance(data, dict) else None
        return len(tokens) if isinstance(tokens, list) else None

    # -- a request
    def body(self, prompt, max_tokens: int) -> dict:
        """The request's JSON body: a completion's `prompt` (text) or a chat's `messages`."""
        e = self.endpoint
        if e.api == "chat":
            messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            body = {"model": e.model, "messages": messages, "max_completion_tokens": max_tokens}
        else:
            body = {"model": e.model, "prompt": prompt, "max_tokens": max_tokens}
        body.update(stream=True, stream_options={"include_usage": True})
        if e.ignore_eos:
            body["ignore_eos"] = True
        body.update(e.extra_body)
        return body

    async def send(self, prompt, max_tokens: int, request_id: str | None = None) -> Outcome:
        """Send one request and read its streamed answer to the end (see the module's rules)."""
        e = self.endpoint
        api = e.api
        out = Outcome()
        body = self.body(prompt, max_tokens)
        headers = _headers(e, request_id)
        text_parts = []
        events = 0
        st = time.perf_counter()
        out.start = last = st
        first = False
        try:
            async with self.session.post(e.url, json=body, headers=headers) as response:
                if response.status != 200:
                    out.error = await _error_message(response)
                    return out
                buffer = bytearray()
                async for chunk in response.content.iter_any():
                    if not chunk:
                        continue
                    now = time.perf_counter()
                    buffer += chunk
                    for data in _events(buffer):
                        if data.startswith(b"[DONE]"):
                            continue
                        events += 1
                        try:
                            message = json.loads(data)
                        except ValueError:
                            out.error = one_line(f"an event that is not JSON: {data[:80]!r}")
                            return out
                        if not isinstance(message, dict):
                            continue
                        if isinstance(message.get("error"), dict):  # an error sent mid-stream
                            out.error = one_line(f"the server stopped the answer: {message['error'].get('message')}")
                            return out
                        _server_metrics(out, message)
                        output, text = _has_output(api, message)
                        if output:
                            if not first:
                                first = True
                                out.ttft = now - st
                            else:
                                out.itl.append(now - last)
                            last = now
                            if text:
                                text_parts.append(text)
                        elif isinstance(message.get("usage"), dict):
                            usage = message["usage"]
                            tokens = usage.get("completion_tokens")
                            if isinstance(tokens, int):
                                out.output_tokens = tokens
                            if isinstance(usage.get("prompt_tokens"), int):
                                out.prompt_tokens = usage["prompt_tokens"]
        except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError) as exc:
            why = connection_error(exc, self.where)
            if events:
                why += f" after {events} events"
            out.error = why
            return out
        out.generated_text = "".join(text_parts)
        if not first:
            out.error = "the answer ended before its first token"
            return out
        out.success = True
        out.latency = last - st
        return out


def _server_metrics(out: Outcome, message: dict) -> None:
    """The server's own figures on the last event, when it sends them (vLLM's `metrics` object:
    queue_time_ms, time_to_first_token_ms), in seconds."""
    metrics = message.get("metrics")
    if not isinstance(metrics, dict):
        return

    def seconds(value):
        return value / 1000.0 if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    out.server_queue_time = seconds(metrics.get("queue_time_ms"))
    out.server_ttft = seconds(metrics.get("time_to_first_token_ms"))
