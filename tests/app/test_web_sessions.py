"""`batchtui web` for real (issue 38, item 6), driven by aiohttp's websocket client as a page's
script would: only its own page opens a session (a foreign Origin, none, or a rebound name is
refused), sessions are capped (the page and the websocket say so), and each session's process
ends with its page and with the command, however the command ends. Each server is a subprocess
on a loopback port the system gives it; its sessions' processes are found as its children in /proc."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("textual_serve")

pytestmark = pytest.mark.wall_clock("terminals")  # servers and sessions: waited on (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
START_S = 60.0
"""How long a session's app may take to draw its first screen on a loaded machine."""


def can_bind(family, host: str) -> bool:
    try:
        with socket.socket(family) as s:
            s.bind((host, 0))
    except OSError:
        return False
    return True


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (a session's app is its server's child)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def gone_within(pids, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return not any(alive(pid) for pid in pids)


class Web:
    """`batchtui web` on a port the system gives it (--port 0: no other test can take it between
    choosing and binding), read from its first line; its sessions' processes killed at the end
    whatever happens."""

    def __init__(self, tmp_path, *flags: str, host: str = "127.0.0.1") -> None:
        env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "batchtui", "web", "--host", host, "--port", "0", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, start_new_session=True)
        self.line = self.proc.stdout.readline()
        assert "batchtui web: the tutorial at http://" in self.line, self.line + self.proc.stderr.read()
        self.url = self.line.split(" at ")[1].split(" ")[0].rstrip("/")
        self.port = int(self.url.rsplit(":", 1)[1])
        assert self.port > 0
        self.sessions_seen: set[int] = set()

    def sessions(self) -> set[int]:
        now = {pid for pid in children(self.proc.pid) if alive(pid)}
        self.sessions_seen |= now
        return now

    def close(self) -> None:
        for pid in self.sessions_seen | self.sessions():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


async def open_session(session, url: str, origin: str | None, **kwargs):
    """A websocket as the page opens it; raises WSServerHandshakeError when refused."""
    return await session.ws_connect(url.replace("http", "ws", 1) + "/ws?width=80&height=24", origin=origin,
                                    **kwargs)


async def first_screen(ws) -> int:
    """Bytes of the app's first output (its first screen is on the way)."""
    async def read():
        async for message in ws:
            if message.type == aiohttp.WSMsgType.BINARY and message.data:
                return len(message.data)
        return 0

    return await asyncio.wait_for(read(), START_S)


async def seat_free(session, url: str, within: float) -> bool:
    """The page no longer says every session is in use (a session's seat is free once it has
    ended: its process, then its pipes)."""
    deadline = time.monotonic() + within
    while True:
        async with session.get(url + "/") as resp:
            if resp.status == 200:
                return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)


async def refused(session, url: str, origin: str | None, **kwargs) -> int:
    with pytest.raises(aiohttp.WSServerHandshakeError) as exc:
        ws = await open_session(session, url, origin, **kwargs)
        await ws.close()
    return exc.value.status


async def test_only_its_own_page_opens_a_session_and_sessions_are_capped(tmp_path):
    web = Web(tmp_path, "--max-sessions", "1")
    try:
        own = web.url  # http://127.0.0.1:PORT
        async with aiohttp.ClientSession() as session:
            assert await refused(session, web.url, "http://evil.example") == 403
            assert await refused(session, web.url, None) == 403
            # Another page on this machine (another port) asking for this server's session:
            assert await refused(session, web.url, f"http://127.0.0.1:{web.port + 1}") == 403
            # A name rebound to 127.0.0.1 (DNS rebinding): the page's own origin, a name not served.
            rebound = f"evil.example:{web.port}"
            assert await refused(session, web.url, f"http://{rebound}", headers={"Host": rebound}) == 403
            async with session.get(web.url + "/", headers={"Host": rebound}) as resp:
                assert resp.status == 403
            assert web.sessions() == set()

            async with session.get(web.url + "/") as resp:
                page = await resp.text()
            assert resp.status == 200 and f'data-session-websocket-url="ws://127.0.0.1:{web.port}/ws"' in page
            first = await open_session(session, web.url, own)
            assert await first_screen(first) > 0
            (pid,) = web.sessions()
            # The cap: the page says so, and a websocket past it is refused.
            async with session.get(web.url + "/") as resp:
                assert resp.status == 503 and "--max-sessions" in await resp.text()
            assert await refused(session, web.url, own) == 503
            # Its page closes: its process ends, and the seat is free again.
            await first.close()
            assert gone_within([pid], 5.0)
            assert await seat_free(session, web.url, 5.0)
            second = await open_session(session, web.url, f"http://localhost:{web.port}",
                                        headers={"Host": f"localhost:{web.port}"})
            assert await first_screen(second) > 0
            await second.close()
    finally:
        web.close()
    assert web.proc.stderr.read() == ""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
async def test_sessions_end_with_the_command(tmp_path, signum):
    web = Web(tmp_path)
    try:
        async with aiohttp.ClientSession() as session:
            pages = [await open_session(session, web.url, web.url) for _ in range(2)]
            for ws in pages:
                assert await first_screen(ws) > 0
            pids = web.sessions()
            assert len(pids) == 2
            os.kill(web.proc.pid, signum)
            assert gone_within(pids, 5.0), [Path(f"/proc/{p}/cmdline").read_text() for p in pids if alive(p)]
            status = web.proc.wait(timeout=10)
            if signum == signal.SIGTERM:
                assert status == 0 and "batchtui web: stopped" in web.proc.stdout.read()
    finally:
        web.close()


async def test_an_ipv6_loopback_host_in_brackets_is_served(tmp_path):
    if not can_bind(socket.AF_INET6, "::1"):
        pytest.skip("no IPv6 loopback here")
    web = Web(tmp_path, host="[::1]")
    try:
        assert web.url == f"http://[::1]:{web.port}"
        async with aiohttp.ClientSession() as session:
            async with session.get(web.url + "/") as resp:
                assert resp.status == 200
                assert f'data-session-websocket-url="ws://[::1]:{web.port}/ws"' in await resp.text()
    finally:
        web.close()
