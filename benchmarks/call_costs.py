"""Where a run's CPU goes, by kind of engine call (issue 40): one run of chat 512/256 at a rate
(vLLM's defaults: async scheduling, prefix caching, one API server), its scheduler's `schedule`
and `async_stretch` timed from the outside (CPU time read as each is entered; a call's share runs
to the next entry, so it holds the engine's work around it: pricing, processing the batch in
flight, booking, and the arrivals admitted before the next call). The kinds:

- "admits, decoders in flight": an explicit call that schedules an arrival's prefill while a batch
  of compact decoders is processed (the first of the two calls an arrival takes);
- "first decode": an explicit call that schedules a new request's first decode while its prefill is
  processed (the second; when a stretch can follow it, it is the stretch's first call instead);
- "admits, a prefill in flight": both at once (an arrival while another's prefill is in flight);
- "other explicit": any other explicit call (preemptions, a waiting queue held back);
- "stretch" / "stretch refused": `async_stretch` running decode calls in bulk (with their booking)
  or finding it cannot (a request waits to be admitted).

The plain run is timed first, without the hooks, so the hooks' own cost shows (about 0.5 us a
call). `--sweep` does the same for each rate of the default sweep (`sim_benchmark.py`'s, 2,000
requests each), one line a rate: where its CPU goes, and the iterations a stretch runs. Usage:

    python benchmarks/call_costs.py [--rate 30] [--requests 20000] [--sweep]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.engine import Engine  # noqa: E402
from sim.scenario import Scenario  # noqa: E402
from sim.workload import LengthSpec, WorkloadSpec  # noqa: E402

KINDS = ("admits, decoders in flight", "first decode", "admits, a prefill in flight", "other explicit",
         "stretch", "stretch refused")


def scenario(rate: float, requests: int) -> Scenario:
    """Chat 512/256 at `rate` on the default profile and dials (sim_benchmark's sweep's traffic)."""
    workload = WorkloadSpec(arrival="poisson", request_rate=rate, num_prompts=requests,
                            input=LengthSpec("fixed", 512), output=LengthSpec("fixed", 256))
    return Scenario(workload=workload, seed=0)


def engine(rate: float, requests: int) -> Engine:
    return Engine(scenario(rate, requests), keep_requests=False, api_server=True)


def timed_run(rate: float, requests: int) -> tuple[float, Counter, Counter, int]:
    """(CPU seconds, calls by kind, CPU seconds by kind, iterations) of one hooked run."""
    eng = engine(rate, requests)
    sched = eng.scheduler
    schedule, stretch = sched.schedule, sched.async_stretch
    clock = time.process_time
    calls: Counter = Counter()
    spent: Counter = Counter()
    state = {"kind": None, "since": 0.0, "flight": None}

    def mark(kind: str) -> None:
        now = clock()
        if state["kind"] is not None:
            spent[state["kind"]] += now - state["since"]
        state["kind"], state["since"] = kind, now
        calls[kind] += 1

    def hooked_schedule():
        flight = state["flight"]
        prefill_in_flight = flight is not None and bool(flight.scheduled)  # (joined rows have left it)
        mark("other explicit")
        out = schedule()
        if out.admitted:
            kind = "admits, a prefill in flight" if prefill_in_flight else "admits, decoders in flight"
        else:
            kind = "first decode" if prefill_in_flight else "other explicit"
        calls["other explicit"] -= 1
        calls[kind] += 1
        state["kind"] = kind
        state["flight"] = out
        return out

    def hooked_stretch(*args, **kwargs):
        mark("stretch refused")
        got = stretch(*args, **kwargs)
        if got:
            calls["stretch refused"] -= 1
            calls["stretch"] += 1
            state["kind"] = "stretch"
            flight = got[1]
            state["flight"] = None if flight is None else flight[0]
        return got

    sched.schedule, sched.async_stretch = hooked_schedule, hooked_stretch
    t0 = clock()
    summary = eng.run()
    total = clock() - t0
    if state["kind"] is not None:
        spent[state["kind"]] += clock() - state["since"]
    return total, calls, spent, summary.iterations


SHORT = {"admits, decoders in flight": "admits", "first decode": "1st dec", "admits, a prefill in flight": "both",
         "other explicit": "other", "stretch": "stretch", "stretch refused": "refused"}


def sweep() -> int:
    """One line per rate of the default sweep: CPU a request (plain run), iterations, iterations a
    stretch, and each kind's share of the hooked run's time."""
    from sim_benchmark import SWEEP_PROMPTS, SWEEP_RATES

    n = SWEEP_PROMPTS
    print(f"the default sweep's rates, {n:,} requests of 512/256 each; shares of each hooked run's CPU")
    print(f"{'req/s':>5s} {'ms':>6s} {'us/req':>7s} {'iterations':>10s} {'it/stretch':>10s} "
          + " ".join(f"{SHORT[kind]:>7s}" for kind in KINDS))
    whole = 0.0
    for rate in SWEEP_RATES:
        t0 = time.process_time()
        engine(rate, n).run()
        plain_s = time.process_time() - t0
        whole += plain_s
        total, calls, spent, iterations = timed_run(rate, n)
        explicit = calls["admits, decoders in flight"] + calls["first decode"] + calls["admits, a prefill in flight"] \
            + calls["other explicit"]
        per_stretch = (iterations - explicit) / calls["stretch"] if calls["stretch"] else 0.0
        print(f"{rate:5g} {plain_s * 1e3:6.1f} {plain_s / n * 1e6:7.1f} {iterations:10,d} {per_stretch:10.1f} "
              + " ".join(f"{100 * spent[kind] / total:6.1f}%" for kind in KINDS))
    print(f"sweep {whole:.3f} s CPU (plain runs); load average " + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=30.0, help="requests/s (default 30)")
    parser.add_argument("--requests", type=int, default=20_000, help="requests in the run (default 20,000)")
    parser.add_argument("--sweep", action="store_true", help="each rate of the default sweep, one line each")
    args = parser.parse_args()
    if args.sweep:
        return sweep()
    t0 = time.process_time()
    plain = engine(args.rate, args.requests).run()
    plain_s = time.process_time() - t0
    total, calls, spent, iterations = timed_run(args.rate, args.requests)
    assert iterations == plain.iterations, "the hooks changed the run"
    n = args.requests
    print(f"{n:,} requests of 512/256 at {args.rate:g} req/s, {iterations:,} iterations: "
          f"{plain_s:.3f} s CPU ({plain_s / n * 1e6:.1f} us a request), hooked {total:.3f} s")
    print(f"{'kind of call':30s} {'calls':>8s} {'us each':>8s} {'us/request':>11s} {'share':>6s}")
    for kind in KINDS:
        if calls[kind]:
            print(f"{kind:30s} {calls[kind]:8,d} {spent[kind] / calls[kind] * 1e6:8.1f} "
                  f"{spent[kind] / n * 1e6:11.1f} {100 * spent[kind] / total:5.1f}%")
    print("load average " + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
