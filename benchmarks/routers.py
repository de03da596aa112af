"""Routers over identical replicas, as `batchtui plan` checks them (`sim.rate_plan.check_router`),
beside rules plan does not use: where least-outstanding-requests' longer TTFT tail comes from.

For each seed it prints, per rule, the pooled steady-state p99 TTFT, the share of requests that
came to a replica before an earlier one there had its first token (`RouterCheck.behind_prefill`)
and the fewest and most requests a replica served. The rules:

- round-robin and least-outstanding-requests: plan's (`rate_plan.route`; ties to the lowest index);
- round-robin routed live: round-robin's choices made as least-outstanding-requests makes its
  own (each replica advanced to the arrival, then the request sent): what routing live costs in
  the simulation, not in the router;
- least-outstanding-requests with ties taken in turn (the first tied replica after the last one
  picked), with ties broken as nginx's least_conn breaks them (a smooth weighted round-robin among
  the tied, ngx_http_upstream_get_least_conn_peer), and at random (Envoy's FULL_SCAN
  least_request, which picks among the tied by reservoir sampling);
- two choices: the fewer outstanding of two replicas drawn at random (Envoy's default
  least_request, choice_count 2).

    python benchmarks/routers.py [--model llama-3.1-70b] [--tp 4] [--input-len 2000] [--output-len 300]
        [--output-dist fixed] [--replicas 8] [--rate 20] [--num-prompts 16000] [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim import rate_plan  # noqa: E402
from sim.planning import Slo  # noqa: E402
from sim.scenario import Scenario  # noqa: E402
from sim.workload import LengthSpec, WorkloadSpec  # noqa: E402

RULES = ("round-robin", "round-robin live", "least-outstanding-requests", "in turn", "nginx", "random",
         "two choices")


def live_router(rule: str, seed: int):
    """A `route` for `check_router` that sends each request by `rule` at its arrival."""
    rng = np.random.default_rng(seed)

    def send(specs, engines, policy):
        n = len(engines)
        sent, turns, last = [0] * n, [0] * n, n - 1
        arrivals = {}
        for i, spec in enumerate(specs):
            t = spec.arrival_time
            loads = []
            for r, engine in enumerate(engines):
                engine.advance_until(t)
                loads.append(sent[r] - rate_plan.finished_by(engine, t))
            low = min(loads)
            tied = [r for r, load in enumerate(loads) if load == low]
            if rule == "round-robin live":
                best = i % n
            elif rule == "in turn":
                best = min(tied, key=lambda r: (r - last - 1) % n)
            elif rule == "nginx":
                best = tied[0]
                if len(tied) > 1:
                    for r in tied:
                        turns[r] += 1
                        if turns[r] > turns[best]:
                            best = r
                    turns[best] -= len(tied)
            elif rule == "random":
                best = int(rng.choice(tied))
            else:  # two choices
                a, b = rng.choice(n, 2, replace=False)
                best = int(a if loads[a] <= loads[b] else b)
            last = best
            engines[best].submit(spec)
            sent[best] += 1
            arrivals[spec.request_id] = t
        for engine in engines:
            engine.run()
        return arrivals

    return send


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="llama-3.1-70b")
    p.add_argument("--gpu", default="h100-sxm")
    p.add_argument("--tp", type=int, default=4)
    p.add_argument("--input-len", type=int, default=2000)
    p.add_argument("--output-len", type=int, default=300)
    p.add_argument("--output-dist", default="fixed", help="fixed or lognormal (clipped at 4x the median)")
    p.add_argument("--replicas", type=int, default=8)
    p.add_argument("--rate", type=float, default=20.0, help="the peak, req/s over all replicas")
    p.add_argument("--num-prompts", type=int, default=16000)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--rules", default=",".join(RULES))
    args = p.parse_args()
    output = LengthSpec(dist=args.output_dist, mean=args.output_len,
                        high=4 * args.output_len if args.output_dist != "fixed" else 0)
    print(f"{args.model} tp{args.tp} on {args.gpu}, {args.input_len} in / {args.output_len} out "
          f"({args.output_dist}), {args.replicas} replicas at {args.rate:g} req/s, {args.num_prompts:,} "
          f"requests; load {os.getloadavg()[0]:.2f}")
    print(f"{'seed':>4}  {'rule':<27} {'p99 TTFT ms':>11}  {'behind a prefill':>16}  {'requests a replica':>18}")
    for seed in (int(s) for s in args.seeds.split(",")):
        sc = Scenario(gpu=args.gpu, model=args.model, tensor_parallel_size=args.tp, seed=seed,
                      workload=WorkloadSpec(arrival="poisson", input=LengthSpec(mean=args.input_len), output=output))
        for rule in args.rules.split(","):
            policy = rule if rule in rate_plan.ROUTER_POLICIES else "least-outstanding-requests"
            router = rate_plan.route if rule in rate_plan.ROUTER_POLICIES else live_router(rule, seed)
            c = rate_plan.check_router(sc, sc.profiles(), policy, args.replicas, args.rate, Slo(None, None),
                                       args.num_prompts, router=router)
            print(f"{seed:>4}  {rule:<27} {c.window['p99_ttft_ms']:>11.1f}  {c.behind_prefill:>16.1%}  "
                  f"{min(c.per_replica):>8,}-{max(c.per_replica):,}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
