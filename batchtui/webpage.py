"""`batchtui web`'s server: the tutorial in a web page, one `batchtui` process per page.

textual-serve's page and scripts (its template and static files: xterm.js speaking Textual's web
driver protocol) are served by an aiohttp application of our own, which owns the sessions:

- a session is opened only by a page this server served (`serving.Origins`: the websocket's
  Origin is the address it asks for, and a name the server answers to), so another site the
  learner visits cannot drive one on their machine;
- at most `max_sessions` run at once: the page says so when they are all taken, and a websocket
  beyond them is refused (503);
- each session is one process (`python -m batchtui`, no shell between) in a process group of its
  own, ended with its page: asked to quit, then SIGTERM, then SIGKILL to its group (`Session.end`).
  Stopping the server (SIGINT, SIGTERM) ends every session so; killed outright, the server's end
  of each session's pipes closes, which the app notices (`batchtui.terminal`) and ends.

The wire between the page and the app is Textual's web driver's: the app writes a line
`__GANGLION__`, then packets of one type byte (D data, M meta as JSON, P packed), a 4-byte
big-endian length and the payload; the server writes keys (D) and meta (resize, focus, blur,
quit) to its input the same way. The page sends JSON envelopes ["stdin", text], ["resize",
{"width", "height"}], ["ping", x], ["focus"], ["blur"]; terminal output goes to it as binary
messages. aiohttp, jinja2 and textual-serve are imported only by `batchtui web`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from importlib import resources
from urllib.parse import urlsplit

from aiohttp import WSMsgType, web

from .serving import WEB_DRIVER, Origins

PRELUDE = b"__GANGLION__\n"
"""The line a Textual app under the web driver writes before its first packet."""
PRELUDE_LINES = 10
"""Lines of output read looking for the prelude before the app is taken as failed to start."""

QUIT_GRACE_S = 3.0
"""After asking a session's app to quit: how long before it is sent SIGTERM."""
TERM_GRACE_S = 2.0
"""After SIGTERM: how long before its process group is killed."""

MAX_SIZE = 1000
"""The widest or tallest terminal a page may ask for, in cells."""
MAX_MESSAGE_BYTES = 1 << 20
"""The longest message a page may send (a paste): aiohttp refuses longer ones."""
STDERR_TAIL_BYTES = 8192
"""How much of a session's standard error is kept, to be shown if it ends in an error."""


def _size(text: str | None, default: int) -> int:
    try:
        return max(1, min(MAX_SIZE, int(text or default)))
    except ValueError:
        return default


def _packet(kind: bytes, payload: bytes) -> bytes:
    return kind + len(payload).to_bytes(4, "big") + payload


class Session:
    """One page's `batchtui` process, and the pipes between it and the page's websocket."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.command = command
        self.env = env
        self.process: asyncio.subprocess.Process | None = None
        self.stderr_tail = bytearray()
        self._stderr_task: asyncio.Task | None = None
        self._ending: asyncio.Future | None = None

    async def start(self, width: int, height: int) -> None:
        env = {**self.env, "COLUMNS": str(width), "ROWS": str(height)}
        self.process = await asyncio.create_subprocess_exec(
            *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True)
        self._stderr_task = asyncio.create_task(self._keep_stderr())

    async def _keep_stderr(self) -> None:
        stream = self.process.stderr
        while data := await stream.read(4096):
            self.stderr_tail += data
            del self.stderr_tail[:-STDERR_TAIL_BYTES]

    async def send(self, kind: bytes, payload: bytes) -> bool:
        stdin = self.process.stdin
        if stdin.is_closing():
            return False
        try:
            stdin.write(_packet(kind, payload))
            await stdin.drain()
        except (ConnectionError, RuntimeError):
            return False
        return True

    async def send_meta(self, meta: dict) -> bool:
        return await self.send(b"M", json.dumps(meta).encode())

    async def pump(self, websocket: web.WebSocketResponse) -> None:
        """The app's output to the page, until the app ends (or says it has)."""
        stdout = self.process.stdout
        try:
            for _ in range(PRELUDE_LINES):
                line = await stdout.readline()
                if not line or line == PRELUDE:
                    break
            else:
                return
            if line != PRELUDE:
                return
            while True:
                head = await stdout.readexactly(5)
                payload = await stdout.readexactly(int.from_bytes(head[1:], "big"))
                kind = head[:1]
                if kind == b"D":
                    await websocket.send_bytes(payload)
                elif kind == b"M":
                    meta = json.loads(payload)
                    if meta.get("type") == "exit":
                        return
                    if meta.get("type") == "open_url":
                        await websocket.send_str(json.dumps(
                            ["open_url", {"url": meta.get("url"), "new_tab": meta.get("new_tab", True)}]))
                # P (packed: file deliveries) is not used by batchtui
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            return

    async def feed(self, envelope) -> None:
        """One message from the page to the app."""
        if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
            return
        kind, data = envelope[0], (envelope[1] if len(envelope) > 1 else None)
        if kind == "stdin" and isinstance(data, str):
            await self.send(b"D", data.encode("utf-8", "replace"))
        elif kind == "resize" and isinstance(data, dict):
            await self.send_meta({"type": "resize", "width": _size(str(data.get("width")), 80),
                                  "height": _size(str(data.get("height")), 24)})
        elif kind in ("focus", "blur"):
            await self.send_meta({"type": kind})

    async def end(self) -> int | None:
        """End the app (once, however many ask; a cancelled caller does not stop it): its exit status."""
        if self._ending is None:
            self._ending = asyncio.ensure_future(self._end())
        return await asyncio.shield(self._ending)

    async def _end(self) -> int | None:
        """Ask the app to quit; SIGTERM its process group if it has not within QUIT_GRACE_S, SIGKILL
        after TERM_GRACE_S more."""
        process = self.process
        if process is None:
            return None
        if process.returncode is None:
            await self.send_meta({"type": "quit"})
            try:
                process.stdin.close()
            except (ConnectionError, RuntimeError):
                pass
        for signum, grace in ((None, QUIT_GRACE_S), (signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, None)):
            if signum is not None and process.returncode is None:
                try:
                    os.killpg(process.pid, signum)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                await asyncio.wait_for(process.wait(), grace)
                break
            except TimeoutError:
                continue
        if self._stderr_task is not None:
            try:
                await asyncio.wait_for(self._stderr_task, 1.0)
            except TimeoutError:
                pass
        return process.returncode


class WebTutorial:
    """The aiohttp application of `batchtui web`: textual-serve's page, and a session per page.

    `command` starts one session's app; `origins` says which pages may open one; at most
    `max_sessions` run at once. `on_event(line)` hears of sessions that end in an error."""

    def __init__(self, command: list[str], origins: Origins, max_sessions: int, title: str = "batchtui",
                 on_event: Callable[[str], None] | None = None) -> None:
        self.command = command
        self.origins = origins
        self.max_sessions = max_sessions
        self.title = title
        self.on_event = on_event or (lambda line: print(line, file=sys.stderr, flush=True))
        self.sessions: set[Session] = set()
        self.stopping = False
        from textual import __version__ as textual_version

        self.env = {**os.environ, "TEXTUAL_DRIVER": WEB_DRIVER, "TEXTUAL_FPS": "60",
                    "TEXTUAL_COLOR_SYSTEM": "truecolor", "TERM_PROGRAM": "textual",
                    "TERM_PROGRAM_VERSION": textual_version}
        files = resources.files("textual_serve")
        self.static = files / "static"
        self.template = _template(files / "templates" / "app_index.html")

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024)
        app.router.add_get("/", self.index)
        app.router.add_get("/ws", self.websocket)
        app.router.add_static("/static", str(self.static))
        return app

    @property
    def full(self) -> bool:
        return len(self.sessions) >= self.max_sessions

    def _busy_text(self) -> str:
        return (f"batchtui web: all {self.max_sessions} sessions are in use (--max-sessions); close another "
                "batchtui page or tab, then reload this one.")

    async def index(self, request: web.Request) -> web.Response:
        host = request.host
        try:
            name = urlsplit(f"http://{host}").hostname or ""
        except ValueError:
            name = ""
        if not self.origins.answers_to(name):
            raise web.HTTPForbidden(text=f"batchtui web does not answer to the name {name!r}: open it by the "
                                         "address it listens on (a page reached by another name could be "
                                         "someone else's, driving your session).\n")
        if self.full:
            raise web.HTTPServiceUnavailable(text=self._busy_text() + "\n", headers={"Retry-After": "5"})
        scheme = "wss" if request.scheme == "https" else "ws"
        context = {"font_size": _size(request.query.get("fontsize"), 16),
                   "app_websocket_url": f"{scheme}://{host}/ws",
                   "config": {"static": {"url": "/static/"}}, "application": {"name": self.title},
                   "ping_url": ""}
        return web.Response(text=self.template.render(**context), content_type="text/html")

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        why = self.origins.allows(request.headers.get("Origin"), request.headers.get("Host"))
        if why is not None:
            raise web.HTTPForbidden(text=f"batchtui web: refused: {why}.\n")
        if self.stopping:
            raise web.HTTPServiceUnavailable(text="batchtui web: stopping.\n")
        if self.full:
            raise web.HTTPServiceUnavailable(text=self._busy_text() + "\n", headers={"Retry-After": "5"})
        session = Session(self.command, self.env)
        self.sessions.add(session)  # (its seat is taken before anything awaits)
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE_BYTES)
        try:
            await websocket.prepare(request)
            try:
                await session.start(_size(request.query.get("width"), 80), _size(request.query.get("height"), 24))
            except OSError as exc:
                self.on_event(f"batchtui web: cannot start a session: {exc.strerror or exc}")
                await websocket.close()
                return websocket
            pump = asyncio.create_task(session.pump(websocket))
            pump.add_done_callback(lambda _: asyncio.ensure_future(websocket.close()))
            try:
                await self._read_page(websocket, session)
            finally:
                pump.cancel()
        finally:
            await self._end(session)
        return websocket

    async def _read_page(self, websocket: web.WebSocketResponse, session: Session) -> None:
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if isinstance(envelope, list) and envelope[:1] == ["ping"]:
                await websocket.send_str(json.dumps(["pong", envelope[1] if len(envelope) > 1 else None]))
            else:
                await session.feed(envelope)

    async def _end(self, session: Session) -> None:
        """End `session`'s process, then free its seat."""
        try:
            status = await session.end()
        finally:
            self.sessions.discard(session)
        if status not in (None, 0, 129, 130, 143, -signal.SIGTERM, -signal.SIGKILL):
            tail = session.stderr_tail.decode("utf-8", "replace").strip().splitlines()[-3:]
            self.on_event(f"batchtui web: a session ended with status {status}" + "".join(f"\n  {t}" for t in tail))

    async def stop(self) -> None:
        """Take no more sessions and end every one running (each as `Session.end` does)."""
        self.stopping = True
        await asyncio.gather(*(session.end() for session in list(self.sessions)), return_exceptions=True)


def _template(path):
    import jinja2

    return jinja2.Environment(autoescape=True).from_string(path.read_text(encoding="utf-8"))
