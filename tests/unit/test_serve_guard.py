"""`batchtui serve`'s guard (issue 38, item 5) in this process: the connection limit (the longest
idle connection makes room; with none idle a clean 503), the idle timeout (the first request's
head included), request bodies (413 past the limit, 408 when they stall), the failure log (a line
per kind, then counts), and the request rules vLLM's models set (a boolean field, a long text
counted a piece at a time)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchtui.serve import guard, tokens
from sim.workload import estimate_tokens

aiohttp = pytest.importorskip("aiohttp")
from aiohttp import web  # noqa: E402


async def _serve(limit: int, keep_alive: float, limits: guard.Limits | None = None):
    """A small app behind the guard on a free loopback port: /slow answers after `?s=` seconds,
    /echo reads its body within `limits`; (url, connections, server, runner)."""
    limits = limits or guard.Limits(connections=limit, keep_alive=keep_alive)
    connections = guard.Connections(limit, keep_alive)

    @web.middleware
    async def in_request(request, handler):
        return await connections.middleware(request, handler)

    async def slow(request):
        await asyncio.sleep(float(request.query.get("s", "0")))
        return web.Response(text="done")

    async def echo(request):
        try:
            body = await guard.read_body(request, limits)
        except guard.BodyError as exc:
            return web.Response(status=exc.status, text=str(exc))
        return web.Response(text=str(len(body)))

    app = web.Application(middlewares=[in_request])
    app.router.add_get("/slow", slow)
    app.router.add_post("/echo", echo)
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=keep_alive, handler_cancellation=True,
                           shutdown_timeout=guard.SHUTDOWN_S)
    await runner.setup()
    connections.make_handler = runner.server
    server = await asyncio.get_running_loop().create_server(connections, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}", port, connections, server, runner


async def _closed_by_peer(reader: asyncio.StreamReader, within: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), within) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:  # (closed while the client was still writing)
        return True


@pytest.mark.wall_clock("servers")
async def test_at_the_limit_the_longest_idle_connection_makes_room_and_busy_ones_get_503():
    url, port, connections, server, runner = await _serve(limit=3, keep_alive=30)
    try:
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        await asyncio.sleep(0.05)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session:
            # A fourth: the first idle connection is closed for it, and it is answered.
            async with session.get(url + "/slow") as resp:
                assert resp.status == 200
            assert await _closed_by_peer(idle[0][0], 2.0)
            assert not await _closed_by_peer(idle[1][0], 0.05)
            for _, writer in idle:
                writer.close()
            await asyncio.sleep(0.1)
            # Three in a request fill it: a fourth is answered 503 in vLLM's error shape.
            slow = [asyncio.ensure_future(session.get(url + "/slow?s=1")) for _ in range(3)]
            await asyncio.sleep(0.3)
            async with session.get(url + "/slow") as resp:
                assert resp.status == 503
                error = (await resp.json())["error"]
                assert error["code"] == 503 and "\n" not in error["message"]
            for done in await asyncio.gather(*slow):
                assert done.status == 200
                done.release()
        assert connections.refused == 1 and connections.evictions == 1
    finally:
        server.close()
        await runner.cleanup()


@pytest.mark.wall_clock("servers")
async def test_an_idle_connection_and_one_sending_its_headers_slowly_are_closed_after_the_keep_alive():
    url, port, connections, server, runner = await _serve(limit=100, keep_alive=0.3)
    try:
        silent_reader, silent = await asyncio.open_connection("127.0.0.1", port)
        slow_reader, slow = await asyncio.open_connection("127.0.0.1", port)
        head = b"GET /slow HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
        start = asyncio.get_running_loop().time()
        for i in range(len(head)):  # a byte every 30 ms: 4 s for a head it never finishes
            try:
                slow.write(head[i:i + 1])
            except ConnectionError:
                break
            await asyncio.sleep(0.03)
            if slow.is_closing() or slow_reader.at_eof():
                break
        assert await _closed_by_peer(silent_reader, 1.0)
        assert await _closed_by_peer(slow_reader, 1.0)
        assert asyncio.get_running_loop().time() - start < 3.0
        # A connection in a request is not cut by the idle timeout.
        async with aiohttp.ClientSession() as session:
            async with session.get(url + "/slow?s=0.6") as resp:
                assert resp.status == 200
        silent.close()
        slow.close()
    finally:
        server.close()
        await runner.cleanup()


@pytest.mark.wall_clock("servers")
async def test_a_request_sent_before_the_keep_alive_ends_is_answered_however_late_the_loop_reads_it():
    """A busy server's loop reads a request and finds its idle timer due in the same turn: the
    request came first, so it is answered (the idle timer once fired first, before the request
    reached the handlers, and the client saw its connection closed: ServerDisconnected)."""
    import socket
    import time

    keep_alive = 0.5
    url, port, connections, server, runner = await _serve(limit=100, keep_alive=keep_alive)
    client = socket.create_connection(("127.0.0.1", port))
    client.settimeout(10)
    try:
        for _ in range(200):  # the server accepts it: its idle timer runs from then
            if connections.open:
                break
            await asyncio.sleep(0.01)
        head = b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
        # The first after the accept, whole; the next after an answer, its head's end in two reads.
        for request, parts in (("the first", [head]), ("the next", [head[:-1], head[-1:]])):
            for part in parts[:-1]:
                client.sendall(part)
                await asyncio.sleep(0.05)  # (the loop reads that much)
            client.sendall(parts[-1])
            time.sleep(keep_alive + 0.3)  # the loop, busy, reads the rest after its deadline
            answer = b""
            while not answer.endswith(b"done"):  # (the whole answer, however it is split)
                more = await asyncio.to_thread(client.recv, 4096)
                if not more:
                    break
                answer += more
            assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"done"), (request, answer)
        assert await asyncio.to_thread(client.recv, 1) == b""  # then idle: closed by the timeout
    finally:
        client.close()
        server.close()
        await runner.cleanup()


@pytest.mark.wall_clock("servers")
async def test_bodies_past_the_limit_get_413_and_stalled_ones_408():
    limits = guard.Limits(connections=100, keep_alive=5, body_bytes=4096, body_idle=0.3)
    url, port, _, server, runner = await _serve(100, 5, limits)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.post(url + "/echo", data=b"x" * 4096) as resp:
                assert resp.status == 200 and await resp.text() == "4096"
            async with session.post(url + "/echo", data=b"x" * 4097) as resp:
                assert resp.status == 413

            async def chunks():  # no Content-Length: the limit is met while reading
                for _ in range(5):
                    yield b"x" * 1000

            async with session.post(url + "/echo", data=chunks()) as resp:
                assert resp.status == 413
        # A declared length past the limit is refused before any of the body is sent.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n")
        line = await asyncio.wait_for(reader.readline(), 2)
        assert line.startswith(b"HTTP/1.1 413")
        writer.close()
        # A body that stops coming: 408 once it has stalled for body_idle.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"x" * 10)
        line = await asyncio.wait_for(reader.readline(), 2)
        assert line.startswith(b"HTTP/1.1 408")
        writer.close()
    finally:
        server.close()
        await runner.cleanup()


def test_a_failure_is_said_once_then_counted_at_most_every_interval():
    lines = []
    now = [0.0]
    log = guard.FailureLog(write=lines.append, every=10.0, clock=lambda: now[0])
    logger = logging.getLogger("aiohttp.server.test-guard")
    logger.addHandler(log)
    logger.propagate = False
    try:
        for i in range(24510):
            now[0] = i * 4 / 24510  # 24,510 in 4 s, as issue 38 saw
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                logger.exception("Error handling request from %s", f"127.0.0.1:{i}")
        log.loop_exception(None, {"message": "socket.accept() out of system resource",
                                  "exception": OSError(24, "Too many open files")})
        log.loop_exception(None, {"message": "socket.accept() out of system resource",
                                  "exception": OSError(24, "Too many open files")})
        assert len(lines) == 2 and all("\n" not in line for line in lines)
        assert lines[0].startswith("batchtui serve: Error handling request from 127.0.0.1:0 (OSError: ")
        assert "socket.accept() out of system resource (OSError" in lines[1]
        now[0] = 4.5
        log.flush()  # within the interval: nothing yet
        assert len(lines) == 2
        now[0] = 10.5  # the first kind's interval is up; the second's (said at 4 s) is not
        log.flush()
        assert lines[2:] == ["batchtui serve: 24,509 more: " + lines[0].removeprefix("batchtui serve: ")]
        log.flush_all()  # at the end: every count not said yet
        assert lines[3:] == ["batchtui serve: 1 more: " + lines[1].removeprefix("batchtui serve: ")]
        log.flush_all()
        assert len(lines) == 4
    finally:
        logger.removeHandler(log)


async def test_installed_it_takes_aiohttps_and_the_loops_failures_then_puts_them_back():
    lines = []
    log = guard.FailureLog(write=lines.append)
    loop = asyncio.get_running_loop()
    before = loop.get_exception_handler()
    log.install(loop)
    try:
        for i in range(100):
            logging.getLogger("aiohttp.server").error("Error handling request", exc_info=ValueError(f"bad {i}"))
            loop.call_exception_handler({"message": "socket.accept() out of system resource",
                                         "exception": OSError(24, "Too many open files")})
    finally:
        log.uninstall()
    assert lines == ["batchtui serve: Error handling request (ValueError: bad 0)",
                     "batchtui serve: socket.accept() out of system resource (OSError: [Errno 24] Too many open files)",
                     "batchtui serve: 99 more: Error handling request (ValueError: bad 0)",
                     "batchtui serve: 99 more: socket.accept() out of system resource (OSError: [Errno 24] Too many "
                     "open files)"]
    assert loop.get_exception_handler() is before and log not in logging.getLogger("aiohttp").handlers


def test_the_kinds_told_apart_are_bounded():
    lines = []
    log = guard.FailureLog(write=lines.append)
    for i in range(guard.MAX_KINDS + 50):
        log.loop_exception(None, {"message": f"failure number {i}"})
    assert len(lines) == guard.MAX_KINDS + 1 and lines[-1].endswith("other failures")


def test_the_body_limit_follows_the_context_length():
    assert guard.body_bytes_for(131072) == 131072 * guard.BODY_BYTES_PER_TOKEN
    assert guard.body_bytes_for(2048) == guard.MIN_BODY_BYTES


# -- vLLM's booleans, and long texts counted a piece at a time

pydantic = pytest.importorskip("pydantic")  # (the openai client's; vLLM's request models are pydantic's)
_BOOL = pydantic.TypeAdapter(bool | None)

values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, -0.0, 0.5, 2.0, float("inf")]),
    st.sampled_from(["true", "false", "True", "FALSE", "yes", "No", "on", "OFF", "t", "F", "y", "n", "1", "0",
                     "", " true", "false ", "2", "1.0", "maybe", "nan", "tRuE"]),
    st.text(max_size=6), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))


@given(values)
def test_a_boolean_field_is_read_as_vllms_request_models_read_it(value):
    try:
        want = _BOOL.validate_python(value)
    except pydantic.ValidationError:
        want = "refused"
    try:
        got = tokens.flag(value, "stream")
    except tokens.PromptError as exc:
        got = "refused"
        assert str(exc).startswith("stream: Input should be a valid boolean") and "\n" not in str(exc)
    assert got == want


texts = st.lists(st.sampled_from([" ", "  ", "\n", "\t", "a", "word", "abcdefghij", "7", "12345", "_", "'s", "'",
                                  ",", "!!", "é", "²", "日本"]), max_size=30).map("".join)


@given(texts, st.integers(1, 8))
def test_a_long_text_counted_a_piece_at_a_time_counts_as_the_rule_does(text, piece):
    assert tokens.text_tokens(text, piece) == (estimate_tokens(text) if text else 0)

