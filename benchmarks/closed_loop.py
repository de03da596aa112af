"""The closed loop, without a GPU: `batchtui bench` measures a served engine batchtui is not told
about, `batchtui calibrate` fits it, and the profile it writes predicts a held-out rate of that
engine.

1. `batchtui serve` runs a hidden GPU (`TRUTH`: an H100's data sheet with other efficiencies and
   host costs, `--profiles truth.toml --gpu h100-truth`; nothing else is told of it), with vLLM's
   defaults otherwise (async scheduling, prefix caching), at `--time-scale X` and
   `--stream-interval 16`;
2. the manual's calibration recipe (docs/calibration.md) ("Calibrate to your GPU": its `B=` block, expanded by bash) runs
   with `batchtui bench --base-url` against it, in this process (`--quick`, the test's: each
   line's `--num-prompts` cut to `QUICK_SHARE` of it, at least `QUICK_MIN`), its simulated column
   on the served GPU: what the served engine gives the traffic sent, with no machine in the way
   (`Loop.moved`, `Loop.machine_free_fit`);
3. the manual's `batchtui calibrate` line fits, from the built-in h100-sxm as it says;
4. `HELD_OUT` runs the recipe does not make are measured the same way and replayed with the
   written profile (`batchtui compare --json`): the error on TTFT p50, TPOT p50 and output
   throughput, simulated / measured - 1.

What the time scale does to what the client measures: the server runs X simulated seconds per
real second, and `batchtui bench` reads X from its /metrics (`batchtui:time_scale`), sends the
traffic X times faster and multiplies every time it measures by X, so its figures are the served
GPU's. The client's own delays (sending, the server process waking, reading: a few real ms on a
busy two-core machine) are multiplied too, and land on TTFT, which they lengthen by a few X ms;
TPOT, a difference of two times, and throughputs hardly move. A faster time scale makes the loop
shorter and TTFT less exact: the test runs at 1 (its delays at their real size), the thorough
variant at 2; the held-out run's prompts (2,048 tokens: a TTFT of about 70 ms) keep their share
small. The fit takes them for slower prefill (a lower tensor-core efficiency), which carries them
into its predictions; on a machine so busy that they change from one run to the next (tens of ms
at a load average of 15 on two cores), no profile predicts them: each run's share is measured (`Loop.added`: its mean TTFT less the
served engine's own over the same requests, from /metrics; 3-4 ms on a quiet machine, 10 ms with
eight busy loops beside it), and the test is skipped, saying so, only when the change in it between
the recipe and a held-out run accounts for that run's TTFT miss. `--stream-interval 16` sends tokens 16 at a time after the first (TTFT and TPOT
unchanged: vLLM's flag), so neither process spends the machine on one event a token.

    python benchmarks/closed_loop.py [--quick] [--time-scale X] [--jobs N]

prints the fit, each held-out run's errors, and how long each stage took, with the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import io
import json
import math
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.calibration_recipe import METRICS, TRUTHS, calibrate, errors, recipe, replay, sent_lines  # noqa: E402
from benchmarks.fit_evaluations import truth_profiles  # noqa: E402

TRUTH = TRUTHS[0]
"""The served GPU: an H100's data sheet with other efficiencies and host costs (the hidden GPU of
tests/unit/test_calibrate_recipe.py, where the recipe is run with `batchtui sim` instead)."""
HELD_OUT = (("2", 100, 2048, 128), ("12", 500, 512, 256))
"""(rate, requests, prompt, output) of runs the recipe does not make; `--quick` runs the first."""
QUICK_SHARE = 0.06
QUICK_MIN = 3
SERVE_FLAGS = ("--stream-interval", "16")


def quick(argv: list[str]) -> list[str]:
    """A recipe line with its --num-prompts cut to QUICK_SHARE (at least QUICK_MIN)."""
    out = list(argv)
    i = out.index("--num-prompts")
    out[i + 1] = str(max(QUICK_MIN, math.ceil(int(out[i + 1]) * QUICK_SHARE)))
    return out


class Server:
    """`batchtui serve` with these flags, on a free port of 127.0.0.1, in a process group of its
    own (ended with it, and by `timeout` whatever happens); `url`."""

    def __init__(self, *flags: str) -> None:
        cmd = ["timeout", "1800", sys.executable, "-m", "batchtui", "serve", "--port", "0", *flags]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                     start_new_session=True)
        line = self.proc.stdout.readline()
        if "http://" not in line:
            self.stop()
            raise RuntimeError(f"batchtui serve did not start: {line}{self.proc.stderr.read()}")
        self.url = "http://" + line.split("http://")[1].split(",")[0]

    def metric(self, name: str) -> float:
        """A series of the server's /metrics (vLLM's names), summed over its labels."""
        import urllib.request

        text = urllib.request.urlopen(self.url + "/metrics", timeout=10).read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.communicate()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def bench(url: str, argv: list[str], directory: Path, truth: Path) -> None:
    """One `batchtui bench` line against the server, in this process (its report discarded), its
    simulated column on the served GPU (`truth`, the served engine's profiles): the figures the
    served engine gives the traffic sent, with no machine in the way (`machine_free`)."""
    from batchtui.cli import main

    with contextlib.chdir(directory), contextlib.redirect_stdout(io.StringIO()):
        code = main(["bench", "--base-url", url, "--profiles", str(truth), "--gpu", "h100-truth", "--disable-tqdm",
                     *argv])
    if code != 0:
        raise RuntimeError(f"batchtui bench {shlex.join(argv)} failed ({code})")


@dataclass
class Loop:
    directory: Path
    results: list[str]
    fit_output: str
    fit: object
    runs: list[dict]
    seconds: dict[str, float]
    added: dict[str, float]
    """What the client added to the served engine's TTFT, on average over a run's requests (its
    mean TTFT less the server's own, vllm:time_to_first_token_seconds over the same requests, in
    the server's seconds): "recipe" over the recipe's runs, and each run's by its file's stem."""
    jobs: int | None = None

    @property
    def errors(self) -> dict[tuple[str, str], float]:
        return errors(self.runs)

    def moved(self) -> dict[tuple[str, str], float]:
        """(recipe run, metric) -> measured / served - 1: how far the machine (the client's and the
        server's delays on the wall clock) moved each figure the fit reads from what the served
        engine gives the same traffic (the result file's simulated column, on the served GPU)."""
        out = {}
        for path in self.results:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            served = data["batchtui"]["simulated"]
            out.update({(Path(path).stem, k): data[k] / served[k] - 1 for k in METRICS})
        return out

    def machine_free_fit(self):
        """The recipe's fit again, from its result files with every TTFT figure (the one the
        machine's delays land on) as the served engine gives the traffic sent (`moved`): the fit
        the same runs make with the machine taken out of TTFT."""
        folder = self.directory / "machine-free"
        (folder / "results").mkdir(parents=True, exist_ok=True)
        for path in self.results:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            served = data["batchtui"]["simulated"]
            data.update({k: served[k] for k in data if "ttft" in k and k in served})
            (folder / "results" / Path(path).name).write_text(json.dumps(data), encoding="utf-8")
        return calibrate(folder, self.jobs)[1]


def run(directory: Path, *, time_scale: float = 1.0, short: bool = True, jobs: int | None = None) -> Loop:
    """The whole loop in `directory` (see the module's doc); `short`: the quick counts and the
    first held-out run only."""
    directory.mkdir(parents=True, exist_ok=True)
    truth = truth_profiles(directory, TRUTH)
    script, _ = recipe()
    lines = sent_lines(script, directory)
    held = [(rate, max(QUICK_MIN, math.ceil(n * QUICK_SHARE * 2)) if short else n, prompt, output)
            for rate, n, prompt, output in (HELD_OUT[:1] if short else HELD_OUT)]
    (directory / "held").mkdir(exist_ok=True)
    seconds = {}
    added = {}
    with Server("--profiles", str(truth), "--gpu", "h100-truth", "--time-scale", f"{time_scale:g}",
                *SERVE_FLAGS) as server:
        t = time.perf_counter()
        first = server_ttft(server)
        for argv in lines:
            known, before = set(glob.glob(str(directory / "results" / "*.json"))), server_ttft(server)
            bench(server.url, quick(argv) if short else argv, directory, truth)
            for path in set(glob.glob(str(directory / "results" / "*.json"))) - known:
                added[Path(path).stem] = client_ttft([path]) - per_request(before, server)
        added["recipe"] = client_ttft(glob.glob(str(directory / "results" / "*.json"))) - per_request(first, server)
        seconds["recipe"] = time.perf_counter() - t
        t = time.perf_counter()
        for rate, n, prompt, output in held:  # measured now, on the same server; replayed after the fit
            before = server_ttft(server)
            name = f"held-{rate}-{prompt}"
            bench(server.url, ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--request-rate", rate, "--num-prompts",
                               str(n), "--random-input-len", str(prompt), "--random-output-len", str(output),
                               "--save-result", "--result-filename", f"held/{name}.json"], directory, truth)
            added[name] = client_ttft([str(directory / "held" / f"{name}.json")]) - per_request(before, server)
        seconds["held-out"] = time.perf_counter() - t
    t = time.perf_counter()
    output, fit = calibrate(directory, jobs)
    seconds["calibrate"] = time.perf_counter() - t
    runs = replay(directory, sorted(glob.glob(str(directory / "held" / "*.json"))), jobs)
    results = sorted(glob.glob(str(directory / "results" / "*.json")))
    return Loop(directory, results, output, fit, runs, seconds, added, jobs)


def server_ttft(server: Server) -> tuple[float, float]:
    """The served engine's TTFTs so far: (their sum in seconds, how many)."""
    return (server.metric("vllm:time_to_first_token_seconds_sum"),
            server.metric("vllm:time_to_first_token_seconds_count"))


def per_request(before: tuple[float, float], server: Server) -> float:
    """The served engine's mean TTFT (seconds) over the requests answered since `before`."""
    total, count = server_ttft(server)
    return (total - before[0]) / max(count - before[1], 1)


def client_ttft(paths: list[str]) -> float:
    """The mean TTFT (seconds) `batchtui bench` measured over the requests of these result files."""
    total = count = 0.0
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        total += data["mean_ttft_ms"] / 1000 * data["completed"]
        count += data["completed"]
    return total / max(count, 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="the test's counts (and one held-out run)")
    p.add_argument("--time-scale", type=float, help="the server's (default 1 with --quick, as the test; else 2)")
    p.add_argument("--jobs", type=int)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="batchtui-closed-loop-") as tmp:
        scale = args.time_scale or (1.0 if args.quick else 2.0)
        loop = run(Path(tmp), time_scale=scale, short=args.quick, jobs=args.jobs)
        print(loop.fit_output.split("\n\nrun ")[0].strip())
        print()
        for (name, metric), error in loop.errors.items():
            print(f"{name:<24} {metric:<20} {error:+7.1%}")
        print("the client added to the engine's mean TTFT: " + ", ".join(
            f"{k} {v * 1000:.1f} ms" for k, v in loop.added.items()))
        stages = ", ".join(f"{k} {v:.0f} s" for k, v in loop.seconds.items())
        print(f"\ntime scale {scale:g}; {stages}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
