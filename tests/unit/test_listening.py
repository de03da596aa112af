"""`batchtui serve` and `batchtui web` listen on every address their --host names on one port
(`serving.listening_sockets`): on a dual-stack machine `localhost` is 127.0.0.1 and ::1, and
`--port 0` once gave each its own free port while the startup line named one."""

from __future__ import annotations

import asyncio
import errno
import socket

import aiohttp
import pytest

from batchtui import serving

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def _second_loopback() -> str:
    """::1 where this machine has IPv6 (a dual-stack localhost), else 127.0.0.2."""
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return "::1"
    except OSError:
        return "127.0.0.2"


@pytest.fixture
def dual_stack_localhost(monkeypatch):
    """`localhost` resolves to two loopback addresses, as on a machine whose /etc/hosts names ::1
    too; the addresses, as sockets spell them."""
    other = _second_loopback()
    resolve = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "localhost":
            return [info for address in ("127.0.0.1", other) for info in resolve(address, port, *args, **kwargs)]
        return resolve(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return ("127.0.0.1", other)


async def _answers(addresses, port: int, path: str) -> list[int]:
    async with aiohttp.ClientSession() as session:
        statuses = []
        for address in addresses:
            async with session.get(f"http://{serving.url_host(address)}:{port}{path}") as response:
                statuses.append(response.status)
        return statuses


async def test_serve_on_port_0_listens_on_every_address_of_its_host_on_the_port_it_names(dual_stack_localhost):
    from batchtui.cli.cmd_serve import start
    from batchtui.cli.parser import build_parser
    from batchtui.cli.setup import build_setup

    args = build_parser("serve").parse_args(["serve", "--host", "localhost", "--port", "0"])
    args.model = None
    served = await start(args, build_setup(args, traffic=False), MODEL)
    try:
        port = int(served.line.split("http://")[1].split(",")[0].rsplit(":", 1)[1])
        assert await _answers(dual_stack_localhost, port, "/health") == [200, 200]
        bound = sorted(s.getsockname()[:2] for server in served.listening for s in server.sockets)
        assert bound == sorted((address, port) for address in dual_stack_localhost)
    finally:
        await served.stop()


async def test_web_on_port_0_listens_on_every_address_of_its_host_on_the_port_it_names(
        dual_stack_localhost, monkeypatch, capsys):
    from batchtui.cli import cmd_web
    from batchtui.cli.parser import build_parser

    answered = []

    async def serve_until_stopped(command, stop):
        line = capsys.readouterr().out
        port = int(line.split("http://localhost:")[1].split("/")[0])
        answered.append(await _answers(dual_stack_localhost, port, "/"))
        await stop()

    monkeypatch.setattr(serving, "serve_until_stopped", serve_until_stopped)
    args = build_parser("web").parse_args(["web", "--host", "localhost", "--port", "0"])
    assert await cmd_web._serve(args, serving.bind(args.host, False, "")) == 0
    assert answered == [[200, 200]]


async def test_a_port_taken_on_one_address_is_tried_again_on_port_0_only(monkeypatch):
    """--port 0: the first address's free port may be another program's on the second; another
    port is tried (PORT_TRIES in all). A port asked for is tried once, and another error at once."""
    tries = []

    def bind_each(addresses, port, host):
        tries.append(port)
        raise OSError(errno.EADDRINUSE, "Address already in use")

    monkeypatch.setattr(serving, "_bind_each", bind_each)
    for port, expected in ((0, serving.PORT_TRIES), (8123, 1)):
        tries.clear()
        with pytest.raises(OSError, match="in use"):
            await serving.listening_sockets("127.0.0.1", port)
        assert tries == [port] * expected

    def refused(addresses, port, host):
        tries.append(port)
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(serving, "_bind_each", refused)
    tries.clear()
    with pytest.raises(OSError, match="Permission"):
        await serving.listening_sockets("127.0.0.1", 0)
    assert tries == [0]


def test_one_address_failing_closes_those_bound_before_it(monkeypatch):
    """Bound to 127.0.0.1 first, then refused on an address already taken: nothing stays bound."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ours = []
        real = socket.socket

        class Kept(real):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                ours.append(self)

        addresses = [(socket.AF_INET, socket.SOCK_STREAM, 6, ("127.0.0.2", port)),
                     (socket.AF_INET, socket.SOCK_STREAM, 6, ("127.0.0.1", port))]
        monkeypatch.setattr(socket, "socket", Kept)
        with pytest.raises(OSError):
            serving._bind_each(addresses, port, "localhost")
        monkeypatch.undo()
        assert len(ours) == 2 and all(s.fileno() == -1 for s in ours)
