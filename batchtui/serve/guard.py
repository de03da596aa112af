"""What keeps `batchtui serve` answering when clients misbehave: connections, bodies and logs.

- `open_files_limit()`: RLIMIT_NOFILE's soft limit raised to the hard one at start (vLLM raises it
  too, to 65,535: `set_ulimit` in vllm/utils), so sockets are not refused for descriptors;
- `Connections`: the listening socket's protocol factory. At most `Limits.connections` are open;
  at the limit a new one takes the place of the longest idle one (waiting for a request: between
  keep-alive requests, or a client that never sent one), and only when every one is in a request
  is the new one answered 503 (vLLM's error shape) and closed. A connection idle for
  `Limits.keep_alive` seconds is closed, the first request's head included (a client sending its
  headers a byte at a time is cut off as one that sends none); a connection is in a request from
  the moment its request's head has come (read in the order the loop reads it: before the timer
  that falls due with it), so a request sent before the deadline is answered however late a busy
  loop reads it;
- `read_body`: a request's body, refused with 413 past `Limits.body_bytes` (at once when its
  Content-Length says so) and with 408 when the client sends none of it for `Limits.body_idle`;
- `FailureLog`: one line on standard error for the first failure of each kind (the asyncio loop's
  and aiohttp's), then how many more, at most once per `REPORT_EVERY_S` per kind and at the end,
  never a traceback: a server whose standard error nobody reads cannot fill its pipe and stall.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

KEEP_ALIVE_S = 5.0
"""vLLM's keep-alive timeout (VLLM_HTTP_TIMEOUT_KEEP_ALIVE, vllm/envs.py, default 5 s)."""
BODY_IDLE_S = 60.0
"""How long a request's body may stall between two reads (nginx's client_body_timeout, 60 s)."""
BODY_BYTES_PER_TOKEN = 32
"""A body limit per token of max_model_len: a token is about four characters of English (OpenAI's
tokenizer guide), and JSON spells a character in at most six bytes (\\uXXXX), so a prompt of
max_model_len tokens fits with room for a chat's JSON around it."""
MIN_BODY_BYTES = 1 << 20
"""The smallest body limit, whatever the context length."""
CONNECTIONS = 16384
"""The most connections open at once by default (fewer if the descriptor limit allows fewer)."""
BACKLOG = 128
"""The listening socket's backlog (aiohttp's TCPSite default)."""
SPARE_FILES = BACKLOG + 64
"""Descriptors kept free of connections: the listening socket, standard streams, the record file,
a burst of accepted connections closed after the loop's next turn."""
SHUTDOWN_S = 3.0
"""When the server stops: how long a request still being answered may take to end before it is
cancelled (aiohttp's default waits a minute, then another)."""
REPORT_EVERY_S = 10.0
"""How often a failure already reported may say how many more of its kind came."""
MAX_KINDS = 64
"""Kinds of failure told apart; any further one is counted as "other"."""


@dataclass(frozen=True)
class Limits:
    """The server's limits: connections open at once, seconds a connection may sit idle, bytes of
    a request's body, seconds its body may stall."""

    connections: int = CONNECTIONS
    keep_alive: float = KEEP_ALIVE_S
    body_bytes: int = MIN_BODY_BYTES
    body_idle: float = BODY_IDLE_S


def body_bytes_for(max_model_len: int) -> int:
    """The default body limit for a context of `max_model_len` tokens."""
    return max(MIN_BODY_BYTES, max_model_len * BODY_BYTES_PER_TOKEN)


def open_files_limit() -> int:
    """Raise RLIMIT_NOFILE's soft limit to the hard one where allowed; the soft limit now."""
    try:
        import resource
    except ImportError:  # (not a POSIX system: nothing to raise)
        return CONNECTIONS + SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65535)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def error_payload(status: int, message: str, kind: str, param: str | None = None) -> dict:
    """vLLM's ErrorResponse (every error the server answers has this shape)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


BUSY_MESSAGE = "the server has as many connections open as it takes, each in a request; try again shortly"
BUSY_RESPONSE = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                 b"Connection: close\r\nContent-Length: %d\r\n\r\n")
REFUSE_WAIT_S = 1.0
"""A refused connection waits this long at most for its request's head, so the 503 is its answer
(answered before the request is read, a client can see a reset instead)."""


class _Refused(asyncio.Protocol):
    """A connection over the limit: its request's head read (briefly), a 503, closed."""

    def __init__(self) -> None:
        self.transport = None
        self.head = 0
        self.timer = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.timer = asyncio.get_running_loop().call_later(REFUSE_WAIT_S, self.answer)

    def data_received(self, data: bytes) -> None:
        self.head += len(data)
        if b"\r\n\r\n" in data or self.head > 16384:
            self.answer()

    def answer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        transport = self.transport
        if transport is not None and not transport.is_closing():
            body = json.dumps(error_payload(503, BUSY_MESSAGE, "ServiceUnavailableError")).encode()
            transport.write(BUSY_RESPONSE % len(body) + body)
            transport.close()

    def connection_lost(self, exc) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.transport = None


HEAD_END = b"\r\n\r\n"
"""What ends an HTTP/1.1 request's head (RFC 9112, section 2.1)."""


class _Tracked(asyncio.Protocol):
    """aiohttp's protocol for one connection, with `Connections` told when it opens and closes,
    and when a request's head has come while it was idle (`tail`: the last bytes of what came
    while idle, so a head's end split between two reads is seen)."""

    __slots__ = ("guard", "handler", "tail")

    def __init__(self, guard: Connections, handler) -> None:
        self.guard = guard
        self.handler = handler
        self.tail = b""

    def connection_made(self, transport) -> None:
        self.guard.opened(self.handler)
        self.handler.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.handler in self.guard.idle:
            seen = self.tail + data
            if HEAD_END in seen:
                self.guard.not_idle(self.handler)
                self.tail = b""
            else:
                self.tail = seen[-(len(HEAD_END) - 1):]
        else:
            self.tail = b""
        self.handler.data_received(data)

    def eof_received(self):
        return self.handler.eof_received()

    def pause_writing(self) -> None:
        self.handler.pause_writing()

    def resume_writing(self) -> None:
        self.handler.resume_writing()

    def connection_lost(self, exc) -> None:
        self.guard.closed(self.handler)
        self.handler.connection_lost(exc)


class Connections:
    """The listening socket's protocol factory over aiohttp's (`make_handler`: the runner's
    server, given once it is set up): the connection limit and the idle timeout (see the module's
    docstring). `middleware` marks a connection in a request."""

    def __init__(self, limit: int, keep_alive: float, make_handler: Callable | None = None) -> None:
        self.make_handler = make_handler
        self.limit = limit
        self.keep_alive = keep_alive
        self.open: set = set()
        self.idle: dict = {}  # open and waiting for a request -> its idle timer, the longest idle first
        self.evicted: set = set()  # closed to make room, not yet gone
        self.refused = 0
        self.evictions = 0

    def __call__(self):
        if len(self.open) - len(self.evicted) >= self.limit and not self._make_room():
            self.refused += 1
            return _Refused()
        return _Tracked(self, self.make_handler())

    def _make_room(self) -> bool:
        """Close the longest idle connection, if one is."""
        if not self.idle:
            return False
        handler = next(iter(self.idle))
        self.idle.pop(handler).cancel()
        self.evicted.add(handler)
        self.evictions += 1
        handler.force_close()
        return True

    def opened(self, handler) -> None:
        self.open.add(handler)
        self._idle(handler)

    def closed(self, handler) -> None:
        self.open.discard(handler)
        self.evicted.discard(handler)
        self.not_idle(handler)

    def not_idle(self, handler) -> None:
        """`handler`'s connection is in a request or closed: no idle timeout, not closed to make room."""
        timer = self.idle.pop(handler, None)
        if timer is not None:
            timer.cancel()

    def _idle(self, handler) -> None:
        loop = asyncio.get_running_loop()
        self.idle[handler] = loop.call_later(self.keep_alive, self._idle_too_long, handler)

    def _idle_too_long(self, handler) -> None:
        if self.idle.pop(handler, None) is not None:
            self.evicted.add(handler)
            handler.force_close()

    async def middleware(self, request, handler):
        """Marks the request's connection busy while it is answered (aiohttp middleware)."""
        connection = request.protocol
        self.not_idle(connection)
        try:
            return await handler(request)
        finally:
            if connection in self.open and connection not in self.evicted and connection not in self.idle:
                self._idle(connection)


class BodyError(Exception):
    """A request body refused: `status` 413 (too long) or 408 (stalled), with the message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_body(request, limits: Limits) -> bytes:
    """The request's body, at most `limits.body_bytes`, none of its reads stalling longer than
    `limits.body_idle`. Raises BodyError."""
    limit = limits.body_bytes
    too_long = f"the request body is larger than the {limit:,} bytes this server takes (--max-request-size)"
    if request.content_length is not None and request.content_length > limit:
        raise BodyError(413, too_long)
    content = request.content
    chunks = []
    size = 0
    while True:
        try:
            async with asyncio.timeout(limits.body_idle):
                chunk = await content.readany()
        except TimeoutError:
            raise BodyError(408, f"the request body stalled for {limits.body_idle:g} s") from None
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise BodyError(413, too_long)
        chunks.append(chunk)


class FailureLog(logging.Handler):
    """Failures of one kind reported once, then counted (see the module's docstring). Installed on
    aiohttp's and asyncio's loggers and as the loop's exception handler (`install`)."""

    def __init__(self, write: Callable[[str], None] | None = None, every: float = REPORT_EVERY_S,
                 clock: Callable[[], float] = time.monotonic, prefix: str = "batchtui serve") -> None:
        super().__init__(logging.WARNING)
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.every = every
        self.clock = clock
        self.prefix = prefix
        self.kinds: dict[tuple, list] = {}  # kind -> [what, more since last said, when last said]
        self._restore: Callable[[], None] | None = None

    # -- what comes in
    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        template = record.msg if isinstance(record.msg, str) else type(record.msg).__name__
        try:
            what = record.getMessage()
        except Exception:  # noqa: BLE001 (a bad format is still a failure to count)
            what = template
        self.count((record.name, template.split("\n")[0], type(exc).__name__), what, exc)

    def loop_exception(self, loop, context: dict) -> None:
        exc = context.get("exception")
        message = str(context.get("message") or "unhandled exception in the event loop")
        self.count(("asyncio", message, type(exc).__name__), message, exc)

    def count(self, kind: tuple, what: str, exc: BaseException | None) -> None:
        entry = self.kinds.get(kind)
        if entry is None:
            if len(self.kinds) >= MAX_KINDS:
                kind, what, exc = ("other",), "other failures", None
                entry = self.kinds.get(kind)
            if entry is None:
                self.kinds[kind] = entry = [_one_line(what, exc), 0, self.clock()]
                self._say(entry[0])
                return
        entry[1] += 1
        if self.clock() - entry[2] >= self.every:
            self.flush_kind(entry)

    # -- what goes out
    def flush_kind(self, entry: list) -> None:
        if entry[1]:
            self._say(f"{entry[1]:,} more: {entry[0]}")
            entry[1] = 0
        entry[2] = self.clock()

    def flush(self) -> None:
        """Say the counts not said yet (at most once per `every` per kind; all of them at the end)."""
        for entry in self.kinds.values():
            if entry[1] and self.clock() - entry[2] >= self.every:
                self.flush_kind(entry)

    def flush_all(self) -> None:
        for entry in self.kinds.values():
            self.flush_kind(entry)

    def _say(self, line: str) -> None:
        try:
            self.write(f"{self.prefix}: {line}")
        except (OSError, ValueError):
            pass

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Take aiohttp's and asyncio's log records, and the loop's unhandled exceptions, until
        `uninstall`."""
        loggers = [logging.getLogger(name) for name in ("aiohttp", "asyncio")]
        saved = [(lg, lg.propagate, lg.level) for lg in loggers]
        for lg in loggers:
            lg.addHandler(self)
            lg.propagate = False
            if lg.level == logging.NOTSET or lg.level > logging.WARNING:
                lg.setLevel(logging.WARNING)
        old_handler = loop.get_exception_handler()
        loop.set_exception_handler(self.loop_exception)

        def restore() -> None:
            for lg, propagate, level in saved:
                lg.removeHandler(self)
                lg.propagate = propagate
                lg.setLevel(level)
            loop.set_exception_handler(old_handler)

        self._restore = restore

    def uninstall(self) -> None:
        """Put back what `install` took (and say the counts not said yet)."""
        self.flush_all()
        restore, self._restore = self._restore, None
        if restore is not None:
            restore()


def _one_line(what: str, exc: BaseException | None) -> str:
    line = what.strip().split("\n")[0] or "a failure"
    if exc is not None:
        where = ""
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            where = f" at {tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}"
        detail = str(exc).strip().split("\n")[0]
        line += f" ({type(exc).__name__}{': ' + detail if detail else ''}{where})"
    return line
