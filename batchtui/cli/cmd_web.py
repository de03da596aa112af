"""`batchtui web`: the tutorial in a web page (textual-serve's page and scripts, served by
`batchtui.webpage`).

It listens on a loopback address (127.0.0.1) unless told otherwise; any other address is refused
unless `--expose` is given, and then what it exposes is said before serving (`serving.bind`, the
rule `batchtui serve` follows too). Reach a loopback server from elsewhere through an SSH tunnel.
A session is opened only by the page this server serves, and at most `--max-sessions` at once;
each ends with its page, and all of them with the command."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys

from .exits import EXIT_OK, UserError
from .options import port, positive_int

HELP = "serve the tutorial in a web page (textual-serve), on this machine only unless --expose"

MAX_SESSIONS = 4
"""Sessions at once by default: each is a batchtui process of about 67 MB resident (measured on
step 1; 20 pages took 1.5 GB in issue 38); a learner uses one or two."""


SHUTDOWN_S = 3.0
"""When the server stops (its sessions already ended): how long a page's connection may take to
close before it is cut."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = ("Serve the tutorial in a web page through textual-serve (python -m pip install textual-serve). "
                     "It has no login: it binds 127.0.0.1, reached from elsewhere through an SSH tunnel "
                     "(ssh -N -L 8000:127.0.0.1:8000 you@host). Each page runs its own batchtui, whose file "
                     "prompts stay in the state folder; only this server's own page opens one.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; another than a "
                                                        "loopback one needs --expose)")
    p.add_argument("--port", type=port, default=8000, help="port (default 8000; 0 = any free one)")
    p.add_argument("--expose", action="store_true",
                   help="allow an address other machines reach: anyone who reaches the port gets a session")
    p.add_argument("--max-sessions", type=positive_int, default=MAX_SESSIONS, metavar="N",
                   help=f"pages served at once, each its own batchtui process (default {MAX_SESSIONS}); "
                        "another page is told to wait")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from batchtui import serving
    from batchtui.state_folder import state_dir

    try:
        binding = serving.bind(args.host, args.expose, "the served tutorial has no login")
    except serving.Refused as exc:
        raise UserError(f"argument --host: {exc}") from None
    try:
        import jinja2  # noqa: F401
        import textual_serve  # noqa: F401
    except ImportError:
        # batchtui is installed from its folder, not an index: the package it lacks is named, for
        # the interpreter that runs it.
        raise UserError(f"serving needs textual-serve, which is not installed: "
                        f"{shlex.quote(sys.executable)} -m pip install textual-serve") from None
    if not binding.local:
        print(serving.web_exposure(binding.host, args.port, state_dir()), file=sys.stderr, flush=True)
    return asyncio.run(_serve(args, binding))


async def _serve(args: argparse.Namespace, binding) -> int:
    from aiohttp import web

    from batchtui.serving import Origins, listening_sockets, serve_until_stopped, url_host
    from batchtui.webpage import WebTutorial

    tutorial = WebTutorial([sys.executable, "-m", "batchtui"], Origins(binding), args.max_sessions)
    runner = web.AppRunner(tutorial.app(), access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_S)
    await runner.setup()
    sockets = []
    try:
        # (every address of --host on one port, --port 0's too: serving.listening_sockets)
        sockets = await listening_sockets(binding.host, args.port)
        for sock in sockets:
            await web.SockSite(runner, sock).start()
    except OSError as exc:
        await runner.cleanup()
        for sock in sockets:
            sock.close()
        raise UserError(f"argument --port: cannot listen on {url_host(binding.host)}:{args.port}: "
                        f"{exc.strerror or exc}") from None
    listening = sockets[0].getsockname()[1]  # the port asked for, or the one the system gave for --port 0
    print(f"batchtui web: the tutorial at http://{url_host(binding.host)}:{listening}/ (at most "
          f"{args.max_sessions} pages at once); Ctrl-C stops it", flush=True)

    async def stop() -> None:
        await tutorial.stop()
        await runner.cleanup()

    await serve_until_stopped("web", stop)
    return EXIT_OK
