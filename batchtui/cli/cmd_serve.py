"""`batchtui serve`: vLLM's OpenAI-compatible server with the simulated engine behind it.

Flags are `vllm serve`'s (the same table of dials as `sim`); the server listens on 127.0.0.1,
and on an address other machines reach only with --expose (`serving.bind`, the rule `batchtui
web` follows too). Its limits (`serve.guard`): connections open at once, an idle connection's
timeout, a request body's size and stall. The HTTP side is batchtui.serve (aiohttp and
prometheus-client, imported here only).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys

from batchtui.serve import guard

from . import args as a
from . import options as o
from .exits import EXIT_OK, UserError
from .setup import build_setup, user_errors

HELP = "serve vLLM's OpenAI-compatible API from the simulated engine, for real clients"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = ("Serve /v1/completions, /v1/chat/completions, /v1/models, /health and /metrics as "
                     "vllm serve does, answered by the simulated engine on the wall clock: point vllm "
                     "bench serve, an OpenAI client or a router at it. Engine flags are vllm serve's.")
    p.add_argument("model_tag", nargs="?", metavar="MODEL",
                   help=o.flagged("the model, as vllm serve takes it (the same as {model})"))
    a.add_setup_args(p)
    s = p.add_argument_group("server")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; another than a loopback one needs --expose)")
    s.add_argument("--port", type=o.port, default=8000, help="port (default 8000; 0 = any free one)")
    s.add_argument("--expose", action="store_true",
                   help="allow an address other machines reach: anyone who reaches the port can send requests")
    s.add_argument("--limit-concurrency", type=o.positive_int, metavar="N",
                   help=f"connections open at once (default {guard.CONNECTIONS:,}, fewer if the open-files limit "
                        "allows fewer): past it a new one replaces the longest idle one, or gets 503 if none is idle")
    s.add_argument("--timeout-keep-alive", type=o.positive_float, default=guard.KEEP_ALIVE_S, metavar="S",
                   help=f"seconds a connection may wait for its next request, or for its first one's headers "
                        f"(default {guard.KEEP_ALIVE_S:g}, vLLM's)")
    s.add_argument("--max-request-size", type=_bytes, metavar="BYTES",
                   help=f"the longest request body taken, answered 413 past it (default "
                        f"{guard.BODY_BYTES_PER_TOKEN} bytes per token of {o.flagged('{engine.max_model_len}')}, at least 1M; 1M = "
                        "1,048,576, 1m = 1,000,000)")
    s.add_argument("--served-model-name", metavar="NAME",
                   help="the model name the API answers to (default: the model's Hugging Face id)")
    s.add_argument("--time-scale", type=o.positive_float, default=1.0, metavar="X",
                   help="simulated seconds per real second: 10 runs ten times faster than the GPU would "
                        "(default 1)")
    s.add_argument("--stream-interval", type=o.positive_int, default=1, metavar="N",
                   help="stream a request's tokens N at a time (its first at once, and its last): fewer "
                        "writes for a busy client or machine (default 1)")
    s.add_argument("--record", metavar="FILE.jsonl",
                   help="write every request served as a trace batchtui sim " + o.flagged("{workload.trace_path}") + " replays "
                        "(written when the server stops)")
    from . import flag_table as t

    t.add_rows(p, (t.row_of("seed"),), into=s)
    s.add_argument("--tui", action="store_true",
                   help="watch the engine while outside traffic drives it: seats, KV blocks, sparklines "
                        "and metrics, live (q quits and stops the server)")
    p.set_defaults(func=run)


def _bytes(text: str) -> int:
    from sim.dials import human_number

    value = human_number(text)
    if value is None or value != int(value) or value < 1024:
        raise argparse.ArgumentTypeError(f"expected a number of bytes of at least 1024 (64M, 500k), got {text!r}")
    return int(value)


@user_errors
def run(args: argparse.Namespace) -> int:
    if args.model_tag is not None:
        if args.model is not None and args.model != args.model_tag:
            raise UserError(f"argument {o.flagged('{model}')}: {args.model!r} differs from the model given first "
                            f"({args.model_tag!r})")
        args.model = args.model_tag
    from batchtui import serving

    try:  # (the exposure rule first: a refused address is said before the engine is built)
        binding = serving.bind(args.host, args.expose, "the simulated server has no API key")
    except serving.Refused as exc:
        raise UserError(f"argument --host: {exc}") from None
    args.host = binding.host
    setup = build_setup(args, traffic=False)
    if setup.config.batching != "continuous":
        raise UserError(o.flagged(f"argument {{engine.batching}}: vllm serve batches continuously; "
                                  f"{setup.config.batching} is for sim and the tutorial"))
    model = setup.deployment.model
    name = args.served_model_name or model.hf_id or model.id
    try:
        import aiohttp  # noqa: F401
        import prometheus_client  # noqa: F401
    except ImportError as exc:
        raise UserError(f"batchtui serve needs {exc.name}: pip install aiohttp prometheus-client") from None
    if not binding.local:
        print(serving.exposure("serve", binding.host, args.port, "each can send requests to the simulated "
                               "engine and read its /metrics"), file=sys.stderr, flush=True)
    if args.tui:
        from batchtui.serve.tui import ServeApp

        app = ServeApp(lambda: start(args, setup, name))
        app.run()
        if app.error is not None:
            raise app.error
        print(app.line or "batchtui serve: stopped", flush=True)
        return EXIT_OK
    return asyncio.run(_serve(args, setup, name))


class Served:
    """A server listening: its listening servers (an asyncio Server an address, all on one port),
    aiohttp runner and connection guard, the pacer (and its engine) and the pacer's task, and the
    failure log."""

    def __init__(self, listening, runner, connections, pacer, recorder, failures, line: str) -> None:
        self.listening = listening
        self.runner = runner
        self.connections = connections
        self.pacer = pacer
        self.recorder = recorder
        self.failures = failures
        self.line = line
        self.task = asyncio.create_task(pacer.run())
        self.reporter = asyncio.create_task(self._report())

    async def _report(self) -> None:
        while True:
            await asyncio.sleep(self.failures.every)
            self.failures.flush()

    async def stop(self) -> None:
        for server in self.listening:
            server.close()
        self.reporter.cancel()
        self.pacer.stop()
        await self.task
        await self.runner.cleanup()
        if self.recorder is not None:
            self.recorder.close()
        self.failures.uninstall()


def limits_of(args, setup) -> guard.Limits:
    """The server's limits from its flags (and the descriptors this process may open)."""
    files = guard.open_files_limit()
    connections = min(args.limit_concurrency or guard.CONNECTIONS, max(1, files - guard.SPARE_FILES))
    body = args.max_request_size or guard.body_bytes_for(setup.config.max_model_len)
    return guard.Limits(connections=connections, keep_alive=args.timeout_keep_alive, body_bytes=body)


async def start(args, setup, name: str) -> Served:
    """Listen, and start the engine's loop (in the running event loop)."""
    from aiohttp import web

    from batchtui.serve.api import make_app
    from batchtui.serve.pacer import Pacer, Recorder
    from batchtui.serve.prom import ServerMetrics, cache_info
    from batchtui.serve.tokens import Tokenizer, family_of
    from batchtui.serving import listening_sockets, url_host
    from sim.engine import Engine

    # (This server is the API server in front of the engine: its own request handling and
    # streaming are real, so the simulated one is off.)
    engine = Engine(setup.scenario, live=True, keep_records=False, keep_requests=True,
                    profiles=setup.profiles, frontend=False)
    metrics = ServerMetrics(name, args.time_scale, setup.config.max_model_len,
                            cache_info(engine, setup.deployment))
    recorder = None
    if args.record:
        try:
            recorder = Recorder(args.record)
        except OSError as exc:
            raise UserError(f"argument --record: cannot write {args.record}: {exc.strerror or exc}") from None
    pacer = Pacer(engine, args.time_scale, observer=metrics, recorder=recorder,
                  stream_interval=args.stream_interval)
    metrics.pacer = pacer
    limits = limits_of(args, setup)
    loop = asyncio.get_running_loop()
    failures = guard.FailureLog()
    failures.install(loop)
    connections = guard.Connections(limits.connections, limits.keep_alive)
    model = setup.deployment.model
    tokenizer = Tokenizer(family_of(model.hf_id, *model.aliases, model.id))
    app = make_app(pacer, metrics, name, limits, connections, tokenizer)
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None, keepalive_timeout=limits.keep_alive,
                           shutdown_timeout=guard.SHUTDOWN_S)
    await runner.setup()
    connections.make_handler = runner.server
    sockets = []
    try:
        # (every address of --host on one port, --port 0's too: serving.listening_sockets)
        sockets = await listening_sockets(args.host or None, args.port)
        listening = [await loop.create_server(connections, sock=sock, backlog=guard.BACKLOG) for sock in sockets]
    except OSError as exc:
        for sock in sockets:
            sock.close()
        await runner.cleanup()
        failures.uninstall()
        if recorder is not None:
            recorder.file.close()
            os.remove(recorder.part)
        raise UserError(f"argument --port: cannot listen on {url_host(args.host)}:{args.port}: "
                        f"{exc.strerror or exc}") from None
    host, port = listening[0].sockets[0].getsockname()[:2]
    scale = args.time_scale
    d = setup.deployment
    if scale == 1:
        pace = "as fast as the GPU would be"
    elif scale > 1:
        pace = f"{scale:g} times faster than the GPU would be"
    else:
        pace = f"{1 / scale:.3g} times slower than the GPU would be"
    line = (f"batchtui serve: {name} on {d.gpu.name} (simulated), http://{url_host(host)}:{port}, time scale {scale:g} "
            f"({pace}); max_model_len {setup.config.max_model_len}, {engine.pool.usable} KV blocks of "
            f"{engine.pool.block_size} tokens")
    # What start-up made lives as long as the server: out of the collector's sight, a full
    # collection is short and cannot stall deliveries for tens of milliseconds (vLLM freezes too).
    gc.collect()
    gc.freeze()
    return Served(listening, runner, connections, pacer, recorder, failures, line)


async def _serve(args, setup, name: str) -> int:
    from batchtui.serving import serve_until_stopped

    served = await start(args, setup, name)
    print(served.line, flush=True)
    await serve_until_stopped("serve", served.stop)
    return EXIT_OK
