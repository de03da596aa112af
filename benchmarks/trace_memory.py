"""Memory and time of `batchtui trace` on large synthetic scheduler cases: each case run in a fresh
process, its trace written to a file in a temporary folder; the child's peak resident memory
(maximum RSS), wall and CPU time and the trace's size are printed, with the load average before
and after. A trace lists every arrived request's counts at every iteration (vLLM's case format),
so its size grows with requests x iterations; the process should grow with one iteration's record
and the scheduler's state, not with the whole trace. Usage:

    python benchmarks/trace_memory.py [--requests 20000,50000,200000] [--spread 100] [--to stdout|file]
                                      [--against DIR]

`--against DIR` runs each case with another checkout too (put first on PYTHONPATH; a copy of
this one with the compiled modules and sim/native.json, and another revision's sources), the two
alternating, each on a row of its own, and says whether their traces are identical. `--to file` writes the trace with `--output FILE` (a temporary file renamed into place), `stdout`
(the default) through a redirection. The cases: N requests arriving evenly over `--spread`
iterations, prompts of 8-64 tokens and outputs of 1-8 (drawn with seed 0), on a scheduler with
room for all of them (8,192 seats, a 65,536-token budget, 200,000 blocks of 16): about
`--spread` + 7 iterations.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# The command line in a fresh process that reports its own peak resident memory and CPU time.
from benchmarks.sim_time_memory import CHILD  # noqa: E402


def synthetic_case(n: int, spread: int, seed: int = 0) -> dict:
    """A scheduler case of `n` requests arriving evenly over `spread` iterations."""
    rng = random.Random(seed)
    requests = [{"id": f"r{i}", "arrival_step": 1 + i * spread // n, "prompt_len": rng.randint(8, 64),
                 "output_len": rng.randint(1, 8)} for i in range(n)]
    config = {"block_size": 16, "num_blocks": 200_001, "max_num_batched_tokens": 65_536, "max_num_seqs": 8_192,
              "enable_chunked_prefill": True, "long_prefill_token_threshold": 0, "policy": "fcfs",
              "watermark": 0.0, "scheduler_reserve_full_isl": True, "enable_prefix_caching": False,
              "async_scheduling": False, "max_model_len": 256}
    return {"name": f"synthetic-{n}", "config": config, "requests": requests}


def measure(case_path: Path, out_path: Path, to: str, root: Path = HERE) -> tuple[float, float, float]:
    """(peak RSS in MB, wall seconds, CPU seconds) of one fresh `batchtui trace` process of the
    checkout at `root`."""
    env = dict(os.environ, BATCHTUI_NO_PROGRESS="1", PYTHONPATH=str(root))
    argv = [sys.executable, "-c", CHILD, "trace", str(case_path)]
    t0 = time.perf_counter()
    if to == "file":
        child = subprocess.run(argv + ["--output", str(out_path)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=env, cwd=root)
    else:
        with out_path.open("wb") as out:
            child = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, env=env, cwd=root)
    wall = time.perf_counter() - t0
    err = child.stderr.decode()
    if child.returncode != 0:
        raise SystemExit(f"batchtui trace {case_path.name} failed: {err.strip()}")
    fields = err.split("PEAK")[-1].split()
    return int(fields[0]) / 1024, wall, float(fields[2])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", default="20000,50000,200000", help="case sizes, comma-separated")
    ap.add_argument("--spread", type=int, default=100, help="iterations the arrivals are spread over")
    ap.add_argument("--to", choices=("stdout", "file"), default="stdout", help="where the trace goes")
    ap.add_argument("--against", metavar="DIR", type=Path, help="another checkout, run alternately")
    args = ap.parse_args()
    roots = [("this", HERE)] + ([("against", args.against.resolve())] if args.against else [])
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"{'checkout':<8} {'requests':>9} {'iterations':>10} {'trace MB':>9} {'peak MB':>9} {'KB/request':>10} "
          f"{'wall s':>8} {'CPU s':>7}")
    with tempfile.TemporaryDirectory(prefix="trace-memory-") as tmp:
        for n in (int(x) for x in args.requests.split(",")):
            case_path = Path(tmp) / f"case-{n}.json"
            case_path.write_text(json.dumps(synthetic_case(n, args.spread)))
            digests: set[str] = set()
            for name, root in roots:
                out_path = Path(tmp) / f"trace-{n}.json"
                peak, wall, cpu = measure(case_path, out_path, args.to, root)
                size = out_path.stat().st_size
                with out_path.open("rb") as f:  # the last iteration's number, without loading the trace
                    f.seek(max(0, size - 200))
                    iterations = int(f.read().decode().rsplit('"last_step": ', 1)[1].split("}")[0])
                digest = hashlib.sha256()
                with out_path.open("rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        digest.update(block)
                digests.add(digest.hexdigest())
                out_path.unlink()
                print(f"{name:<8} {n:>9,} {iterations:>10,} {size / 1e6:>9.0f} {peak:>9.0f} "
                      f"{peak * 1024 / n:>10.1f} {wall:>8.2f} {cpu:>7.2f}", flush=True)
            if len(roots) > 1:
                print(f"{'':<8} the two traces are {'identical' if len(digests) == 1 else 'DIFFERENT'}")
    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
