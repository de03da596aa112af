"""`batchtui bench`: load a real OpenAI-compatible server (a vLLM, `batchtui serve`, any other) as
`vllm bench serve` loads it, write the result file it writes, and print its report with the
simulator's figures for the same traffic beside it.

The traffic is `batchtui sim`'s (the same flags, the same traffic builder, `setup.build_setup`):
`sim.arrivals` plans it for the scenario's seed and the client (`batchtui.loadgen`) sends it on the
wall clock, so the simulated column runs exactly the arrivals and lengths that were sent, on the
profile the command line names (`--gpu`, `--model`, the engine's flags; the defaults otherwise).
Prompts are sized through the server's /tokenize when it has one, else by a stated rule; the
server's /metrics is read before, during and after the run. Ctrl-C (or SIGTERM) stops sending,
keeps what finished (the report and the result file of the finished requests) and exits 130 (143).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import json
import math
import os
import signal
import sys
import textwrap
import uuid
from dataclasses import dataclass, replace
from datetime import datetime

from . import args as a
from . import options as o
from .flag_table import dest
from . import report_block, results
from .cmd_sim import keep_earlier_results, make_result_dir, metadata, result_options, result_path
from .exits import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, Terminated, UserError
from .output import Sink, check_writable, output_file
from .runner import Runner, expected_requests, show_progress_default
from .setup import build_setup, user_errors

LATE_NOTE_S = 0.001
"""Sent later than this after their time (the median), the requests' lateness is said."""
HELP = "load a real OpenAI-compatible server as vllm bench serve does, with the simulator's figures beside"
IGNORE_EOS_DATASETS = ("random", "timed_trace", "mooncake_trace")
"""Datasets for which full-length answers are asked for without --ignore-eos: vLLM 0.33 sets
ignore_eos for its random datasets and for timed traces (a Mooncake trace is one, read in its
own units)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Load an OpenAI-compatible server (a vLLM, batchtui serve, any other) with vllm bench serve's traffic "
        "and flags, write the result file vllm bench serve writes (--save-result), and print its report with "
        + o.flagged("the simulator's figures for the same traffic beside it (simulated on {gpu}, {model} and the engine "
                    "flags given; the defaults otherwise)."))
    a.add_client_args(p)  # (before the table's other flags: these are used, not recorded)
    a.add_setup_args(p)
    a.add_traffic_args(p)
    a.add_result_args(p, label="the --backend")
    out = a.add_result_json(p)
    out.add_argument("--no-simulate", action="store_true",
                     help="no simulated column (nothing is simulated)")
    p.set_defaults(func=run)


# -- what the command line asks ---------------------------------------------------------------------

def endpoint_from(args):
    """The server and how to call it, from vllm bench serve's flags; UserError for what it refuses."""
    from batchtui.loadgen.client import BACKENDS, DEFAULT_ENDPOINTS, ENDPOINT_SUFFIX, Endpoint

    if args.backend not in BACKENDS:
        raise UserError(f"argument --backend: {args.backend} is not one batchtui bench speaks: it sends OpenAI "
                        "API requests (openai or vllm: /v1/completions; openai-chat: /v1/chat/completions)")
    api = BACKENDS[args.backend]
    path = args.endpoint or DEFAULT_ENDPOINTS[api]
    if not path.startswith("/"):
        raise UserError(f"argument --endpoint: {path!r} is not a path (such as {DEFAULT_ENDPOINTS[api]})")
    if not path.rstrip("/").endswith(ENDPOINT_SUFFIX[api]):
        raise UserError(f"argument --endpoint: --backend {args.backend} calls a path ending in "
                        f"{ENDPOINT_SUFFIX[api]}, not {path}")
    if args.base_url:
        base = args.base_url.rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise UserError(f"argument --base-url: {args.base_url!r} is not an http:// or https:// address")
    else:
        host = f"[{args.host}]" if ":" in args.host and not args.host.startswith("[") else args.host
        base = f"http://{host}:{args.port}"
    headers = {}
    for item in args.header or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"argument --header: expected KEY=VALUE, got {item!r}")
        headers[key.strip()] = value.strip()
    extra = {}
    for flag, name, _ in a.SAMPLING_FLAGS:
        value = getattr(args, dest(flag))
        if value is not None:
            extra[name] = value
    if args.logprobs is not None:
        extra["logprobs"] = args.logprobs
    if args.extra_body:
        try:
            body = json.loads(args.extra_body)
        except json.JSONDecodeError as exc:
            raise UserError(f"argument --extra-body: not JSON ({exc.msg})") from None
        if not isinstance(body, dict):
            raise UserError("argument --extra-body: expected a JSON object of request fields")
        extra.update(body)
    dataset = args.dataset_name or ("timed_trace" if args.workload else "random")
    return Endpoint(base_url=base, path=path.rstrip("/") or path, backend=args.backend,
                    model=args.served_model_name or args.model or "", headers=headers, extra_body=extra,
                    ignore_eos=bool(args.ignore_eos or dataset in IGNORE_EOS_DATASETS), insecure=args.insecure)


def simulated_model(name: str | None, profiles) -> str | None:
    """The model profile a served model's name resolves to, or None (not a known profile)."""
    if not name:
        return None
    resolved = o.resolve_model(name, profiles)
    return resolved if resolved in profiles.models else None


def _sim_args(args) -> tuple[argparse.Namespace, str | None]:
    """The command line as the simulated side reads it: --model only when it names a known
    profile (a served name the profiles do not know runs the default model, said in one line)."""
    from sim.scenario import Scenario

    sim_args = argparse.Namespace(**vars(args))
    if args.model and args.hf_config is None:
        profiles = Scenario(profiles_path=args.profiles or "").profiles()
        if simulated_model(args.model, profiles) is None:
            sim_args.model = None
            return sim_args, args.model
    return sim_args, None


def engine_metadata(args) -> dict:
    """The engine flags given, as --metadata entries (`max-num-seqs`: "256"): they describe the
    server, so calibrate and compare replay the file with them."""
    return metadata_entries(o.given_dials(args))


def metadata_entries(dials: dict) -> dict:
    """Engine and deployment dials by name (`max_num_seqs`: 256) as --metadata entries in their
    flags' spelling and unit; a dial without a vLLM flag is left out."""
    out = {}
    flags = {f.dial: f for f in o.engine_flags()}
    for dial, value in dials.items():
        if dial in flags:
            f = flags[dial]
            if isinstance(value, bool):
                text = str(value).lower()
            elif isinstance(value, (int, float)) and f.spec.flag_scale != 1:  # in the flag's unit (ms)
                text = f"{value * f.spec.flag_scale:g}"
            else:
                text = str(value)
            out[f.flag.lstrip("-")] = text
    return out


# -- the run ---------------------------------------------------------------------------------------

@dataclass
class Measured:
    """What the run gave: the traffic sent and answered, and what was learnt of the server."""

    traffic: object
    model: str
    prompts: object
    watch: object
    time_scale: float
    started: datetime


class _Stop:
    """Ctrl-C or SIGTERM while the client runs: stops sending (keeping what finished), or,
    before the run has started, stops at once."""

    def __init__(self) -> None:
        self.event: asyncio.Event | None = None
        self.signals: list[int] = []
        self.sending = False

    @property
    def terminated(self) -> bool:
        return signal.SIGTERM in self.signals


def _run_client(work, stop: _Stop):
    """asyncio.run(work(stop)) with SIGINT and SIGTERM turned into `stop`, the handlers before
    put back after; a stop before the run started is a KeyboardInterrupt (Terminated)."""
    async def main():
        loop = asyncio.get_running_loop()
        stop.event = asyncio.Event()
        task = asyncio.current_task()

        def on_signal(signum: int) -> None:
            stop.signals.append(signum)
            stop.event.set()
            if not stop.sending:
                task.cancel()

        saved = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                saved[sig] = signal.getsignal(sig)
                loop.add_signal_handler(sig, on_signal, sig)
            except (ValueError, RuntimeError):  # not the main thread: signals stay as they were
                saved.pop(sig, None)
        try:
            return await work(stop)
        finally:
            for sig, before in saved.items():
                loop.remove_signal_handler(sig)
                signal.signal(sig, before)

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        raise (Terminated() if stop.terminated else KeyboardInterrupt()) from None


async def _measure(args, endpoint, setup, bar, stop: _Stop) -> Measured:
    from batchtui.loadgen.client import Client, ServerUnreachable
    from batchtui.loadgen.prompts import prepare
    from batchtui.loadgen.scrape import Scrape, ServerWatch
    from batchtui.loadgen.traffic import send_traffic
    from sim.arrivals import Arrivals

    w = setup.scenario.workload
    async with Client(endpoint, limit=w.max_concurrency or 0) as client:
        try:
            models = await client.models()
        except ServerUnreachable as exc:
            raise ServerGone(str(exc)) from None
        if not endpoint.model:
            if not models:
                raise UserError(o.flagged("give {model}: the server lists no model at /v1/models"))
            endpoint.model = models[0]
        elif models is not None and endpoint.model not in models:
            raise UserError(f"argument --{'served-model-name' if args.served_model_name else 'model'}: the server "
                            f"serves {', '.join(models)}, not {endpoint.model}")
        arrivals = Arrivals.for_scenario(setup.scenario)
        scrape = Scrape.parse(await client.metrics_text())  # batchtui serve states its time scale there
        server = "batchtui serve" if scrape is not None and scrape.time_scale else "the server"
        prompts = await prepare(client, arrivals.dataset_prompts, server=server)
        if args.ready_check_timeout_sec or args.num_warmups:
            await _warm_up(client, prompts, setup.scenario, args.ready_check_timeout_sec, args.num_warmups)
        watch = ServerWatch(endpoint)
        await watch.start()
        scale = watch.time_scale
        started = datetime.now()
        bar.expect(_expected(setup.scenario))
        stop.sending = True
        if stop.event.is_set():
            raise asyncio.CancelledError
        try:
            traffic = await send_traffic(client, arrivals, prompts, time_scale=scale, stop=stop.event,
                                         on_finish=lambda n: bar.update(n, "benchmarking"),
                                         request_id_prefix=args.request_id_prefix or f"bench-{uuid.uuid4().hex[:8]}-")
            stop.sending = False
        finally:
            await watch.stop()
    return Measured(traffic, endpoint.model, prompts, watch, scale, started)


class ServerGone(Exception):
    """The server cannot be reached before the run: one line, exit 1."""


def _expected(scenario) -> int | None:
    n = expected_requests(scenario)
    return n * scenario.workload.turns if n else None


async def _warm_up(client, prompts, scenario, timeout: int, warmups: int) -> None:
    """vllm bench serve's ready check (the first request sent until it is answered, for up to
    `timeout` s) and warm-up requests (the first request, `warmups` times, at once), unmeasured."""
    import time

    from sim.arrivals import Arrivals

    first = Arrivals.for_scenario(scenario).pop_due(math.inf)
    prompt = prompts.prompt(first, client.endpoint.api == "chat")
    if timeout:
        deadline = time.monotonic() + timeout
        while True:
            out = await client.send(prompt, first.output_len)
            if out.success:
                break
            if time.monotonic() >= deadline:
                raise ServerGone(f"the server did not answer a first request within --ready-check-timeout-sec "
                                 f"{timeout}: {out.error}")
            await asyncio.sleep(min(5.0, max(0.0, deadline - time.monotonic())))
    if warmups:
        await asyncio.gather(*(client.send(prompt, first.output_len) for _ in range(warmups)))


# -- the command -----------------------------------------------------------------------------------

@user_errors
def run(args: argparse.Namespace) -> int:
    from batchtui.loadgen.measure import DETAILED, bench_figures, peak_concurrency

    endpoint = endpoint_from(args)
    sim_args, unknown_model = _sim_args(args)
    setup = build_setup(sim_args)
    w = setup.scenario.workload
    opts = result_options(args)
    meta = metadata(args)
    meta = {**engine_metadata(args), **meta}
    make_result_dir(args)
    if args.save_result or args.append_result:  # (refused now, not after the run)
        named = os.path.join(args.result_dir or "", args.result_filename) if args.result_filename else None
        check_writable(named, "--result-filename", args.result_dir)
    elif args.result_dir or args.result_filename:
        raise UserError("argument --result-filename/--result-dir: needs --save-result")
    show = show_progress_default(json_output=args.json) and not args.disable_tqdm
    _open_files_to_the_hard_limit()
    stop = _Stop()
    with Runner(show_progress=show) as bar:
        try:
            measured = _run_client(lambda s: _measure(args, endpoint, setup, bar, s), stop)
        except ServerGone as exc:
            print(f"batchtui: error: {exc}", file=sys.stderr)
            return EXIT_FAILURE
    if not args.model and unknown_model is None:  # the model the server named: simulated if known
        known = simulated_model(measured.model, setup.profiles)
        if known is not None and known != setup.scenario.model:
            setup = setup.with_scenario(replace(setup.scenario, model=known))
        elif known is None:
            unknown_model = measured.model
    traffic = measured.traffic
    rate = (w.trace_rate or math.inf) if w.arrival == "trace" else w.request_rate
    figures = bench_figures(traffic, time_scale=measured.time_scale, percentile_metrics=opts["percentile_metrics"],
                            percentiles=opts["percentiles"], goodput=opts["goodput"],
                            max_concurrency=w.max_concurrency or None, finite_rate=math.isfinite(rate))
    date = datetime.now().strftime("%Y%m%d-%H%M%S")
    data = _result(args, setup, measured, figures, meta, date, rate)
    if not args.save_detailed:
        for key in DETAILED:
            data.pop(key, None)
    simulated = None
    if not args.no_simulate and not traffic.stopped:  # (a run cut short is not the whole traffic)
        with Runner(show_progress=show, profiles=setup.profiles) as runner:
            sim_run = runner.run(setup.scenario, percentiles=opts["percentiles"], goodput=opts["goodput"])
        simulated = dict(sim_run.metrics)
        simulated.update(results.client_queue_metrics(sim_run.records, w, opts["percentiles"]))
        # vllm bench serve's count (active requests per second), as the measured column has it
        starts = sim_run.records.column("arrival_time")
        simulated["max_concurrent_requests"] = peak_concurrency(starts, starts + sim_run.records.column("e2e"))
        data["batchtui"]["simulated"] = _simulated_summary(simulated, setup, opts)
    path = result_path(args, setup, date, model_id=measured.model, label=args.backend)
    with output_file(path, "--result-filename") as result_file:
        if result_file is not None:
            if args.append_result:
                keep_earlier_results(path, result_file)
            results.dump_json(result_file, data, indent=None)
    if args.json:
        results.dump_json(Sink(sys.stdout, "standard output"), data)
    else:
        shown = {**figures, **(measured.watch.spec_decode() or {})}
        _report(args, endpoint, setup, measured, shown, simulated, opts, unknown_model)
        if path:
            print(f"Result saved to {path}")
    done = len(traffic.finished)
    if traffic.stopped:
        word, status = ("terminated", EXIT_TERMINATED) if stop.terminated else ("interrupted", EXIT_INTERRUPTED)
        kept = f"; the result holds them ({path})" if path else ""
        print(f"batchtui: {word}: {done} of {len(traffic.sent)} requests sent had finished "
              f"({traffic.unfinished} in flight were cancelled){kept}", file=sys.stderr)
        return status
    if figures["completed"] == 0:
        print("batchtui: error: no request succeeded (the errors are above)", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _open_files_to_the_hard_limit() -> None:
    """Every request in flight holds a connection (vllm bench serve's client has no cap but
    --max-concurrency): the soft limit on open files is raised to the hard one, so a run of a
    thousand requests at once does not fail for want of file descriptors (the default soft limit
    is often 1,024)."""
    import resource

    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):  # not allowed here: the connections fail as they would have
        pass


def _result(args, setup, measured, figures: dict, meta: dict, date: str, rate: float) -> dict:
    """The result file: vllm bench serve's keys in its order, then batchtui's own under one key."""
    from batchtui.loadgen.measure import result_data

    traffic = measured.traffic
    return result_data(
        backend=args.backend, label=args.label, model=measured.model,
        tokenizer=setup.recorded.get("--tokenizer") or measured.model, num_prompts=expected_requests(setup.scenario),
        meta=meta, workload=setup.scenario.workload, rate=rate, figures=figures, traffic=traffic,
        started=measured.started, time_scale=measured.time_scale, watch=measured.watch,
        own={"prompts": measured.prompts.rule, "seed": setup.scenario.seed, "time_scale": measured.time_scale,
             "sent": len(traffic.sent), "interrupted": traffic.stopped, "unfinished": traffic.unfinished,
             "server_metrics": measured.watch.summary(), "recorded_flags": dict(setup.recorded)}, date=date)


def _simulated_summary(simulated: dict, setup, opts) -> dict:
    """The simulator's figures for the same traffic, kept in the result beside the measured ones."""
    keep = [k for k in simulated if isinstance(simulated[k], (int, float)) and not isinstance(simulated[k], bool)
            and (k.endswith("_ms") or k in ("completed", "failed", "duration", "total_input_tokens",
                                             "total_output_tokens", "request_throughput", "output_throughput",
                                             "total_token_throughput", "max_output_tokens_per_s",
                                             "max_concurrent_requests", "peak_kv_usage", "num_preemptions",
                                             "mean_running", "max_running", "prefix_cache_hit_rate"))]
    d = setup.deployment
    return {"gpu": d.gpu.id, "model": d.model.id, "tensor_parallel_size": d.tensor_parallel_size,
            "engine": setup.config.to_dict(), "seed": setup.scenario.seed, **{k: simulated[k] for k in keep}}


def _report(args, endpoint, setup, measured, figures, simulated, opts, unknown_model) -> None:
    w = setup.scenario.workload
    traffic = measured.traffic
    say = functools.partial(textwrap.fill, width=100)
    print(say(f"batchtui bench: {endpoint.url}, model {measured.model} ({args.backend})."))
    print(say(f"Traffic: {results.traffic_text(w)}, seed {setup.scenario.seed}."))
    print(say(f"Prompts: {measured.prompts.rule}."))
    if measured.time_scale != 1:
        x = measured.time_scale
        print(say(f"Time scale {x:g} (the server's batchtui:time_scale): requests were sent {x:g} times "
                  f"{'faster' if x > 1 else 'slower'} than planned and every time measured is multiplied by {x:g}, "
                  f"so the figures are the served GPU's; the client's own delays are multiplied too."))
    if simulated is not None:
        print(results.setup_text(setup.scenario, setup.deployment, setup.config, lead="Simulated beside it:",
                                 traffic=False))
        if unknown_model:
            print(say(f"({unknown_model} is not a known model profile: the simulated column runs "
                      f"{setup.deployment.model.name}; " + o.flagged("give {model} with a known one, or "
                                                                      "--hf-config-path FILE.)")))
    print()
    rows = report_block.benchmark_rows(figures, workload=w, percentile_metrics=opts["percentile_metrics"],
                                  percentiles=opts["percentiles"], goodput=bool(opts["goodput"]))
    print(report_block.side_by_side_block(rows, figures, simulated, _server_rows(measured.watch, simulated)))
    for line in _notes(traffic, measured, figures):
        print(line)


def _server_rows(watch, simulated) -> list[tuple]:
    """What the server's /metrics said over the run, beside what the simulator saw."""
    summary = watch.summary()
    if summary is None:
        return []
    gauges, counters = summary["gauges"], summary["counters"]
    sim = simulated or {}
    rows = []
    kv = gauges.get("vllm:kv_cache_usage_perc", {}).get("peak")
    if kv is not None:
        rows.append(("Peak KV cache use (%):", 100.0 * kv, 100.0 * sim["peak_kv_usage"] if sim else None))
    running = gauges.get("vllm:num_requests_running", {}).get("peak")
    if running is not None:
        rows.append(("Peak running requests:", int(running), sim.get("max_running")))
    waiting = gauges.get("vllm:num_requests_waiting", {}).get("peak")
    if waiting is not None:
        rows.append(("Peak waiting requests:", int(waiting), None))
    if "vllm:num_preemptions" in counters:
        rows.append(("Preemptions:", int(counters["vllm:num_preemptions"]), sim.get("num_preemptions")))
    queries = counters.get("vllm:prefix_cache_queries")
    if queries:
        hits = counters.get("vllm:prefix_cache_hits", 0.0)
        rows.append(("Prefix cache hit rate (%):", 100.0 * hits / queries,
                     100.0 * sim["prefix_cache_hit_rate"] if "prefix_cache_hit_rate" in sim else None))
    return rows


def _notes(traffic, measured, figures) -> list[str]:
    """Lines under the block: the failures (one line each kind, counted), the server's prompt
    counts when they differ from the plan, how /metrics was read."""
    out = []
    failed = [s.outcome.error for s in traffic.finished if not s.outcome.success]
    if failed:
        kinds = collections.Counter(failed)
        out.append(f"Failed requests: {len(failed)} ({len(kinds)} kind{'s' if len(kinds) > 1 else ''} of error)")
        for error, count in kinds.most_common(5):
            out.append(f"  {count} x {error}")
        if len(kinds) > 5:
            out.append(f"  ... and {len(kinds) - 5} other errors (the result file's errors list each, "
                       "with --save-detailed)")
    counted = [(s.outcome.prompt_tokens, s.spec.prompt_len) for s in traffic.finished
               if s.outcome.success and s.outcome.prompt_tokens is not None]
    if counted:
        served = sum(c for c, _ in counted)
        planned = sum(p for _, p in counted)
        if planned and abs(served / planned - 1) > 0.005:
            out.append(f"The server counted {served / planned - 1:+.1%} prompt tokens against the plan "
                       f"({served / len(counted):.0f} a request on average, {planned / len(counted):.0f} planned): "
                       "the simulated column runs the planned lengths.")
    late = sorted(s.late for s in traffic.sent)
    if late and late[len(late) // 2] > LATE_NOTE_S:
        out.append(f"The client sent requests {late[len(late) // 2] * 1000:.1f} ms after their time at the median "
                   f"({late[-1] * 1000:.1f} ms at worst): a busy machine; the simulated column sends them on time.")
    watch = measured.watch
    if watch.summary() is not None:
        out.append(f"Server figures: /metrics read every {watch.interval:g} s during the run (peaks "
                   "between two readings are missed).")
    elif watch.before is not None:
        out.append("The server's /metrics could not be read after the run: its KV cache, preemptions and prefix "
                   "hits over the run are not known.")
    else:
        out.append("The server has no /metrics: its KV cache, preemptions and prefix hits are not known.")
    if traffic.stopped:
        out.append("(The run was stopped before its end: no simulated column, which would run the whole traffic.)")
    return out
