"""What speculative decoding costs the simulator (issue 39).

With a drafter every request is held explicitly and run one iteration at a time (a decoder's
tokens per step vary, so the compact decoders and the stretches of alike iterations do not
apply). Prints the CPU time of the same sweep with and without EAGLE-3 (K=3), timed in the same
process, their runs interleaved, best of `--repeats`, and the ratio; also the iterations each
simulated. The sweep: SIMULATOR.md section 8's rates (2, 4, ... 48 requests/s) with `--requests`
requests each (default 500; the section's 2,000 takes four times as long), 512 in / 256 out,
Poisson, default profile and dials.

    python benchmarks/spec_benchmark.py [--requests N] [--repeats N] [--pin CPU]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.engine import Engine  # noqa: E402
from sim.scenario import Scenario  # noqa: E402
from sim.workload import LengthSpec, WorkloadSpec  # noqa: E402

RATES = (2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 24, 28, 32, 36, 40, 48)
EAGLE3 = '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'


def sweep(requests: int, speculative: str | None) -> tuple[float, int]:
    """CPU seconds of one sweep and the iterations it simulated."""
    profiles = Scenario().profiles()
    start = time.process_time()
    iterations = 0
    for rate in RATES:
        scenario = Scenario(workload=WorkloadSpec(arrival="poisson", request_rate=float(rate), num_prompts=requests,
                                                  input=LengthSpec("fixed", 512), output=LengthSpec("fixed", 256)),
                            speculative_config=speculative)
        iterations += Engine(scenario, profiles=profiles, keep_records=False).run().iterations
    return time.process_time() - start, iterations


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pin", type=int, default=None, help="run on this CPU only")
    args = ap.parse_args(argv)
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})
    plain, spec = [], []
    for _ in range(args.repeats):
        plain.append(sweep(args.requests, None))
        spec.append(sweep(args.requests, EAGLE3))
    best_plain, best_spec = min(plain), min(spec)
    print(f"sweep of {len(RATES)} rates x {args.requests} requests, best of {args.repeats} (CPU s):")
    print(f"  without a drafter: {best_plain[0]:.2f} s, {best_plain[1]:,} iterations")
    print(f"  EAGLE-3, K=3:      {best_spec[0]:.2f} s, {best_spec[1]:,} iterations")
    print(f"  ratio: {best_spec[0] / best_plain[0]:.1f}x the time; per iteration "
          f"{(best_spec[0] / best_spec[1]) / (best_plain[0] / best_plain[1]):.1f}x")
    print(f"  load average: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
