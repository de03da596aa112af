"""`batchtui web`: the tutorial in a web page, through textual-serve (the `serve` extra).

It binds a loopback address (127.0.0.1) unless told otherwise; any other address is refused
unless `--expose` is given, and then what it exposes is said before serving. Reach a loopback
server from elsewhere through an SSH tunnel."""

from __future__ import annotations

import argparse
import shlex
import sys

from .exits import EXIT_OK, UserError
from .options import positive_int

HELP = "serve the tutorial in a web page (textual-serve), on this machine only unless --expose"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = ("Serve the tutorial in a web page through textual-serve (python -m pip install textual-serve). "
                     "It has no login: it binds 127.0.0.1, reached from elsewhere through an SSH tunnel "
                     "(ssh -N -L 8000:127.0.0.1:8000 you@host). Each page runs its own batchtui, whose file "
                     "prompts stay in the state folder.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; another than a "
                                                        "loopback one needs --expose)")
    p.add_argument("--port", type=positive_int, default=8000, help="port (default 8000)")
    p.add_argument("--expose", action="store_true",
                   help="allow an address other machines reach: anyone who reaches the port gets a session")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from batchtui import serving
    from batchtui.progress import state_dir

    if not 1 <= args.port <= 65535:
        raise UserError(f"argument --port: expected a port from 1 to 65535, got {args.port}")
    try:
        local = serving.loopback(args.host)
    except (OSError, UnicodeError) as exc:
        raise UserError(f"argument --host: {args.host} does not resolve ({getattr(exc, 'strerror', None) or exc})") from None
    if not local and not args.expose:
        raise UserError(f"argument --host: {args.host} is reachable from other machines, and the served tutorial "
                        "has no login; keep 127.0.0.1 and use an SSH tunnel, or add --expose to serve it there anyway")
    try:
        from textual_serve.server import Server
    except ImportError:
        # batchtui is installed from its folder, not an index: the package it lacks is named, for
        # the interpreter that runs it.
        raise UserError(f"serving needs textual-serve, which is not installed: "
                        f"{shlex.quote(sys.executable)} -m pip install textual-serve") from None
    if not local:
        print(serving.exposure(args.host, args.port, state_dir()), file=sys.stderr, flush=True)
    command = f"{shlex.quote(sys.executable)} -m batchtui"
    Server(command, host=args.host, port=args.port, title="batchtui").serve()
    return EXIT_OK
