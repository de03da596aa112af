"""Fidelity of the default profile against published vLLM measurements (issue 24).

Every file under tests/data/published is one published measurement of vLLM serving Llama 3.x 8B
or 70B on an H100, H200 or A100, written as a `vllm bench serve` result (the keys `batchtui
compare` reads, the GPU and model preset as `--metadata gpu=... model=...` entries) plus a
`fidelity` block: the source's address, its date and vLLM version, what was measured (`measured`:
the keys the source gave; nothing else in the file is a measurement), and what is unknown or
assumed. Each run is replayed on the simulator with the default profiles, as `batchtui compare
tests/data/published/*.json` does, and each measured figure is set against the simulated one.

Prints a table of every figure (published, simulated, error, and whether it is within the
tolerance of its kind, or a known miss and why), then the median absolute error over output
throughput and TPOT p50, the goal's figures. `--markdown` prints the README's fidelity table.

    python benchmarks/fidelity.py [--markdown]

The tolerances are what the model achieves on this set and says it achieves (README, "Fidelity"),
not what would make every point pass; a figure outside its tolerance is listed in KNOWN_MISSES
with the reason, or it fails tests/unit/test_fidelity.py.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PUBLISHED = ROOT / "tests" / "data" / "published"

KINDS = {
    "output_throughput": "throughput",
    "request_throughput": "throughput",
    "median_tpot_ms": "TPOT p50",
    "median_ttft_ms": "TTFT p50",
    "median_itl_ms": "ITL p50",
    "mean_e2el_ms": "latency",
    "median_e2el_ms": "latency",
}
"""The kind of each figure a published file may give."""

TOLERANCE = {
    "throughput": 0.15,
    "TPOT p50": 0.15,
    "latency": 0.25,
    "TTFT p50": 0.5,
    "ITL p50": 0.5,
}
"""How far (relative) the default profile's figure may be from the published one, by kind: output
throughput and TPOT p50 within 15 % (issue 24's goal); an offline batch's latency within 25 %;
TTFT and ITL medians of a loaded run, which hang on every request's length and arrival, within
50 %."""

_SHAREGPT = ("replayed at its mean lengths (229 in / 203 out; the source gives only the totals) while ShareGPT's "
             "answers range from a few tokens to over a thousand: the batch's last seconds, with a few long answers "
             "running in a small batch, are missing from the replay (its throughput is high), and short answers, "
             "whose few tokens each carry the prefills they ride along with, are missing from its TPOT median "
             "(low: ITL p50 25.0 ms against 25.4 measured, with the default 50 us a sequence paid synchronously "
             "as in that engine)")
_SYNC_STEP = ("a synchronous engine's fixed host cost per iteration in that build: {ms} ms a step more than "
              "the forward pass at a batch of 8 (vLLM 0.33 hides it with async scheduling; batchtui's fixed "
              "overhead is 0.02 ms, the lesson's 6.02 ms step)")
KNOWN_MISSES: dict[tuple[str, str], str] = {
    ("vllm-pr18566-sharegpt-inf", "output_throughput"): _SHAREGPT,
    ("vllm-pr18566-sharegpt-inf", "median_tpot_ms"): _SHAREGPT,
    ("vllm-perf-h200-latency-8b", "mean_e2el_ms"): _SYNC_STEP.format(ms="about 1.8"),
    ("vllm-perf-h200-latency-70b-tp4", "mean_e2el_ms"): _SYNC_STEP.format(ms="about 5.6"),
}
"""(file stem, key) -> why the default profile misses that figure by more than its kind's
tolerance (the README's fidelity section lists them)."""

GOAL_KINDS = ("throughput", "TPOT p50")


@dataclass(frozen=True)
class Row:
    stem: str
    gpu: str
    model: str
    key: str
    kind: str
    published: float
    simulated: float
    source: str
    aside: str = ""
    """Why the figure is not counted (the file's `set_aside`), or "" when it is."""

    @property
    def error(self) -> float:
        return self.simulated / self.published - 1 if self.published > 0 else math.nan

    @property
    def within(self) -> bool:
        return abs(self.error) <= TOLERANCE[self.kind]

    @property
    def verdict(self) -> str:
        if self.aside:
            return "set aside"
        if self.within:
            return "ok"
        return "known miss" if (self.stem, self.key) in KNOWN_MISSES else "MISS"


def published_files() -> list[Path]:
    return sorted(PUBLISHED.glob("*.json"))


def rows(paths: list[Path] | None = None, profiles_path: str = "") -> list[Row]:
    """Every published figure against the simulator's, default profiles (or `profiles_path`)."""
    from batchtui.cli.measured import load_run
    from sim.engine import run_scenario
    from sim.scenario import Scenario

    out = []
    with tempfile.TemporaryDirectory(prefix="batchtui-fidelity-") as trace_dir:
        for i, path in enumerate(paths or published_files()):
            meta = json.loads(path.read_text(encoding="utf-8"))["fidelity"]
            # The GPU and the model each file names, as `batchtui compare` reads them.
            run = load_run(str(path), Scenario(profiles_path=profiles_path), {}, trace_dir, i, ("gpu", "model"))
            metrics = run_scenario(run.scenario, keep_requests=False).metrics
            aside = meta.get("set_aside") or {}
            for key in meta["measured"]:
                out.append(Row(path.stem, run.scenario.gpu, run.scenario.model, key, KINDS[key], run.metrics[key],
                               float(metrics[key]), meta["source"], aside.get(key, "")))
    return out


def goal_error(table: list[Row]) -> float:
    """Median absolute error over the goal's kinds (output throughput and TPOT p50)."""
    errors = [abs(r.error) for r in table if r.kind in GOAL_KINDS and not r.aside]
    return statistics.median(errors)


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:,.2f}"


def text_table(table: list[Row]) -> str:
    head = f"{'published run':<36} {'gpu':<9} {'figure':<19} {'published':>10} {'batchtui':>10} {'error':>8}  verdict"
    lines = [head, "-" * len(head)]
    for r in table:
        lines.append(f"{r.stem:<36} {r.gpu:<9} {r.key:<19} {_fmt(r.published):>10} {_fmt(r.simulated):>10} "
                     f"{r.error:>+8.1%}  {r.verdict}")
    return "\n".join(lines)


def markdown_table(table: list[Row]) -> str:
    lines = ["| published run | GPU | figure | published | batchtui | error | |",
             "|---|---|---|--:|--:|--:|---|"]
    for r in table:
        lines.append(f"| [{r.stem}]({r.source}) | {r.gpu} | {r.key} | {_fmt(r.published)} | {_fmt(r.simulated)} | "
                     f"{r.error:+.0%} | {r.verdict} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--markdown", action="store_true", help="print the README's table")
    p.add_argument("--profiles", default="", help="a profile file to use instead of the default profiles")
    args = p.parse_args(argv)
    table = rows(profiles_path=args.profiles)
    print(markdown_table(table) if args.markdown else text_table(table))
    print()
    by_kind: dict[str, list[float]] = {}
    for r in table:
        if r.aside:
            continue
        by_kind.setdefault(r.kind, []).append(abs(r.error))
    for kind, errors in by_kind.items():
        print(f"{kind:<11} {len(errors):>2} figure(s): median |error| {statistics.median(errors):.1%}, worst "
              f"{max(errors):.1%} (tolerance {TOLERANCE[kind]:.0%})")
    counted = [r for r in table if not r.aside]
    print(f"output throughput and TPOT p50: median |error| {goal_error(table):.1%} over "
          f"{sum(r.kind in GOAL_KINDS for r in counted)} counted figures ({len(table) - len(counted)} of "
          f"{len(table)} figures set aside, reasons in their files)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
