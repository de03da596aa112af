"""Who may reach batchtui's two servers, and where a served page may write.

`batchtui serve` (the simulated vLLM API) and `batchtui web` (the tutorial in a web page) have no
login, so both follow one exposure rule (`bind`): they listen on a loopback address unless
`--expose` asks for one other machines reach, and then say what that exposes (`exposure`). A host
is given as sockets and URLs spell it (`::1` or `[::1]`).

A web page the learner visits elsewhere can still reach a loopback server through their browser,
so `batchtui web` takes a session only from a page it served itself (`Origins`): the websocket's
Origin must be the address its Host names, and that a name this server answers to (a rebound DNS
name is not). A served session's file prompts (the playground's `w` and `o`) stay inside the
state folder (`confine`).
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

WEB_DRIVER = "textual.drivers.web_driver:WebDriver"
"""The driver textual-serve starts each page's app with (in TEXTUAL_DRIVER)."""

WILDCARDS = ("0.0.0.0", "::", "")
"""Addresses that listen on every interface."""


def served() -> bool:
    """This app runs in a web page through textual-serve."""
    return os.environ.get("TEXTUAL_DRIVER", "") == WEB_DRIVER


def bare(host: str) -> str:
    """`host` as sockets take it: an IPv6 literal without the brackets a URL puts around it."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def url_host(host: str) -> str:
    """`host` as a URL spells it: an IPv6 literal in brackets."""
    host = bare(host)
    return f"[{host}]" if ":" in host else host


def loopback(host: str) -> bool:
    """Every address `host` names is a loopback one (127.0.0.0/8, ::1): only this machine reaches it.
    Raises OSError (socket.gaierror) when the name does not resolve."""
    host = bare(host)
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


class Refused(ValueError):
    """The address asked for breaks the exposure rule, or does not resolve (the message says which)."""


@dataclass(frozen=True)
class Binding:
    """Where a server listens: `host` as sockets take it, and whether only this machine reaches it."""

    host: str
    local: bool


def bind(host: str, expose: bool, unguarded: str) -> Binding:
    """The one exposure rule of `batchtui serve` and `batchtui web`: a loopback address is served;
    any other only with `expose`. `unguarded` completes "...reachable from other machines, and"
    in the refusal: what a stranger reaching the port would get. Raises Refused."""
    name = bare(host)
    try:
        local = loopback(name)
    except (OSError, UnicodeError) as exc:
        raise Refused(f"{host} does not resolve ({getattr(exc, 'strerror', None) or exc})") from None
    if not local and not expose:
        raise Refused(f"{host} is reachable from other machines, and {unguarded}; keep 127.0.0.1 and use an "
                      "SSH tunnel, or add --expose to serve it there anyway")
    return Binding(name, local)


def exposure(command: str, host: str, port: int, gives: str) -> str:
    """What serving `command` on a non-loopback address exposes, in one paragraph; `gives` says
    what each visitor gets."""
    where = f"{url_host(host)}:{port}" if port else f"{url_host(host)} (on a free port, said below)"
    return (f"batchtui {command}: serving on {where} to anyone who can reach that port, with "
            f"no login and no encryption: {gives}. Stop it with Ctrl-C.")


def web_exposure(host: str, port: int, state_dir: Path) -> str:
    """`exposure` for `batchtui web`: each page's session runs as this user and writes in `state_dir`."""
    try:
        import pwd

        user = pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        user = "this user"
    return exposure("web", host, port, f"each page runs batchtui as {user} on this machine, and its file "
                                       f"prompts read and write scenario files in {state_dir}")


class Origins:
    """The pages a `batchtui web` on `binding` (port `port`) takes sessions from.

    A name the server answers to (`answers_to`): on a loopback binding, `localhost` and loopback
    addresses; on a named address, that name; listening everywhere, any address literal and this
    machine's own names. A port is not checked against `port`: an SSH tunnel moves it."""

    def __init__(self, binding: Binding) -> None:
        self.binding = binding
        names = {"localhost"}
        host = binding.host.lower()
        self.everywhere = host in WILDCARDS
        self.addresses: frozenset = frozenset()
        if self.everywhere:
            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        else:
            names.add(host)
            try:
                infos = socket.getaddrinfo(binding.host, None, proto=socket.IPPROTO_TCP)
                self.addresses = frozenset(ipaddress.ip_address(i[4][0].split("%")[0]) for i in infos)
            except (OSError, UnicodeError, ValueError):
                pass
        self.names = frozenset(names)

    def answers_to(self, name: str) -> bool:
        """A page reached as http://`name`/ is one this server served (no DNS name it was not told)."""
        name = bare(name.lower().rstrip("."))
        try:
            address = ipaddress.ip_address(name.split("%")[0])
        except ValueError:
            return name in self.names
        if self.binding.local:
            return address.is_loopback
        return self.everywhere or address in self.addresses

    def allows(self, origin: str | None, host_header: str | None) -> str | None:
        """Why a websocket from a page at `origin`, asking for `host_header`, is refused (None: it is
        taken). It must come from the very address it asks for, and that one this server answers to."""
        if not origin or not host_header:
            return "no Origin: only the page batchtui web serves opens a session"
        try:
            page = urlsplit(origin)
            asked = urlsplit(f"{page.scheme}://{host_header}")
            page_port, asked_port = page.port, asked.port
        except ValueError:
            return f"the Origin {origin!r} is not an address"
        default = {"http": 80, "https": 443}.get(page.scheme)
        if default is None or not page.hostname:
            return f"the Origin {origin!r} is not a web page's address"
        if (page.hostname, page_port or default) != (asked.hostname, asked_port or default):
            return f"a page at {origin} asked for a session at {host_header}: only its own page opens one"
        if not self.answers_to(page.hostname):
            return f"{page.hostname} is not a name this server answers to"
        return None


PORT_TRIES = 20
"""For `--port 0` on a host name with several addresses: how many free ports `listening_sockets`
tries before it gives up (one of them in use on another address is a race with another program)."""


async def listening_sockets(host: str | None, port: int) -> list[socket.socket]:
    """Sockets bound to every address `host` names (None or "": every interface), all on one port
    and not yet listening: `port`, or for 0 the port the system gives the first address, bound on
    the others too (another when one of them has it in use). Each is bound as asyncio's
    `create_server` binds (address reused, an IPv6 socket IPv6 only); that function, given port 0,
    gives each address a port of its own: `localhost` on a dual-stack machine listened on two
    ports, and one URL names one. Raises OSError (as binding does) or socket.gaierror."""
    infos = await asyncio.get_running_loop().getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)
    addresses = list(dict.fromkeys((family, kind, proto, address) for family, kind, proto, _, address in infos))
    tries = PORT_TRIES if port == 0 else 1
    for attempt in range(1, tries + 1):
        try:
            return _bind_each(addresses, port, host)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or attempt == tries:
                raise
    return []  # (not reached: the last try returns or raises)


def _bind_each(addresses: list[tuple], port: int, host: str | None) -> list[socket.socket]:
    """A socket bound to each `getaddrinfo` address, all on `port` (0: the one the system gives the
    first); none left open when one fails."""
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, address in addresses:
            try:
                sock = socket.socket(family, kind, proto)
            except OSError:  # (a family this machine lacks, as create_server skips it)
                continue
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, True)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, True)
            sock.bind((address[0], port, *address[2:]))
            port = sock.getsockname()[1]
        if not sockets:
            raise OSError(f"no address of {host or 'this machine'} can be bound here")
        return sockets
    except BaseException:
        for sock in sockets:
            sock.close()
        raise


async def serve_until_stopped(command: str, stop: Callable[[], Awaitable[None]]) -> None:
    """Both servers' lives once listening: until SIGINT or SIGTERM, then `stop()`, then one line."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    try:
        await stopping.wait()
    finally:
        await stop()
    print(f"batchtui {command}: stopped", flush=True)


def confine(text: str, folder: Path) -> Path:
    """The file a served prompt names, inside `folder` (a relative name is taken there). Raises
    ValueError, in words for the learner, for anything that leads outside it."""
    name = Path(text)
    path = name if name.is_absolute() else folder / name
    real_folder = Path(os.path.realpath(folder))
    real = Path(os.path.realpath(path))
    if real != real_folder and real_folder not in real.parents:
        raise ValueError(f"In a browser, files stay in {folder}: give a file name there.")
    return path
