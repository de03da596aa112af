"""Step 18's reading exercise: percentiles of two runs."""

from __future__ import annotations

import math

from sim.reports import BATCH_POOL, pool_label
from sim.scenario import Scenario

from ..figures import fmt
from ..numbers import ms
from .base import Feedback, Kind, seeded_rng


READ_CHOICES = (
    "Queueing: the engine is at capacity; add replicas or shed load.",
    "Heavier iterations: a bigger batch or long prefills.",
    "Nothing that matters changed.",
)


class Read:
    """A table to read and a diagnosis to pick with a number key."""

    def __init__(self, table_md: str, choices: tuple[str, ...], answer: int, explanation: str,
                 case: str = "", figures: dict | None = None) -> None:
        self.table_md = table_md
        self.choices = choices
        self.answer = answer
        self.explanation = explanation
        self.case = case
        self.figures = dict(figures or {})
        self.done = False

    def check(self, choice_number: int) -> Feedback:
        if not isinstance(choice_number, int) or not 1 <= choice_number <= len(self.choices):
            return Feedback(False, f"Press a number from 1 to {len(self.choices)}.")
        if choice_number == self.answer:
            self.done = True
            return Feedback(True, f"Right. {self.explanation}", float(choice_number), show_derivation=True)
        wrong = {
            1: "TTFT p99 alone would point to queueing, but look at TPOT p99 too.",
            2: "Heavier iterations show in TPOT; check whether TPOT p99 really moved.",
            3: "Compare the two columns again: one percentile moved a lot.",
        }[choice_number]
        return Feedback(False, wrong, float(choice_number))

    def give_up(self) -> str:
        self.done = True
        return f"Answer {self.answer}: {self.choices[self.answer - 1]} {self.explanation}"


class PercentileReading:
    """Builds `Read` questions from two simulated runs: before and after an incident."""

    name = "percentiles"
    PROMPTS = 800
    CASES = ("queueing", "heavier", "steady")

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario.with_workload(num_prompts=self.PROMPTS)
        self._saturated: dict[int, float] = {}

    def saturated_rate(self, seats: int) -> float:
        if seats not in self._saturated:
            from sim.engine import run_scenario

            run = run_scenario(self.scenario.with_engine(max_num_seqs=seats)
                               .with_workload(request_rate=math.inf))
            self._saturated[seats] = run.metrics["request_throughput"]
        return self._saturated[seats]

    def case_runs(self, case: str, rng) -> tuple[Scenario, Scenario, str]:
        """The before and after scenarios of one incident, and what changed (in words)."""
        base = self.scenario.replace(seed=int(rng.integers(0, 2**31)))
        if case == "queueing":
            # The seats were already full before the change: only the queue can grow.
            seats = int(rng.choice([48, 64]))
            sat = self.saturated_rate(seats)
            before = float(rng.uniform(0.9, 1.0)) * sat
            after = float(rng.uniform(1.3, 1.45)) * sat
            capped = base.with_engine(max_num_seqs=seats)
            return (capped.with_workload(request_rate=round(before, 1)),
                    capped.with_workload(request_rate=round(after, 1)),
                    f"traffic rose from {fmt(before)} to {fmt(after)} req/s")
        if case == "heavier":
            if rng.integers(0, 2):
                lo, hi = float(rng.choice([6.0, 8.0])), float(rng.choice([18.0, 22.0]))
                return (base.with_workload(request_rate=lo), base.with_workload(request_rate=hi),
                        f"traffic rose from {fmt(lo)} to {fmt(hi)} req/s")
            share = float(rng.choice([0.25, 0.3]))
            return (base.with_workload(batch_pool_share=0.0), base.with_workload(batch_pool_share=share),
                    f"batch jobs went from none to {fmt(share * 100)}% of requests")
        rate = float(rng.choice([8.0, 10.0, 12.0]))
        return (base.with_workload(request_rate=rate), base.with_workload(request_rate=rate * 1.05)
                .replace(seed=base.seed + 1), "a new day, the same traffic give or take 5%")

    def new_question(self, seed: int) -> Read:
        from sim.engine import run_scenario

        rng = seeded_rng(seed)
        case = self.CASES[seed % len(self.CASES)]  # consecutive retries meet every diagnosis
        before_sc, after_sc, change = self.case_runs(case, rng)
        before, after = run_scenario(before_sc).pools, run_scenario(after_sc).pools
        rows = []
        figures = {}
        for pool in ("chat", BATCH_POOL):
            if pool not in before and pool not in after:
                continue
            for key, label in (("median_ttft_ms", "TTFT p50"), ("p99_ttft_ms", "TTFT p99"),
                               ("median_tpot_ms", "TPOT p50"), ("p99_tpot_ms", "TPOT p99")):
                b = before.get(pool, {}).get(key)
                a = after.get(pool, {}).get(key)
                figures[(pool, key)] = (b, a)
                rows.append(f"| {pool_label(pool)} {label} | {_ms_cell(b)} | {_ms_cell(a)} |")
        # Runs of their own, not the live pane's: said above the table, so no figure in it reads
        # as a second value for one the panes show.
        table = ("Another server (not the live pane), before and after a change:\n\n"
                 "| per pool | before | after |\n|---|---|---|\n" + "\n".join(rows))
        answer = {"queueing": 1, "heavier": 2, "steady": 3}[case]
        ttft = figures[("chat", "p99_ttft_ms")]
        tpot = figures[("chat", "p99_tpot_ms")]
        explanation = (f"What happened: {change}. Chat TTFT p99 went from {_ms_cell(ttft[0])} to "
                       f"{_ms_cell(ttft[1])}, TPOT p99 from {_ms_cell(tpot[0])} to "
                       f"{_ms_cell(tpot[1])}: ")
        explanation += {
            1: "requests wait for a seat, the batch already as big as it gets.",
            2: "every iteration carries more, a bigger batch or long prefills.",
            3: "percentiles wobble from run to run; a few per cent is noise.",
        }[answer]
        return Read(table, READ_CHOICES, answer, explanation, case=case, figures=figures)


def _ms_cell(value: float | None) -> str:
    """A latency in ms (as `vllm bench serve` reports it) as the metrics pane prints one: its
    unit and three digits kept, "11.0 ms" beside "12.5 ms", "1.46 s"."""
    return "–" if value is None else ms(value / 1000.0)


KIND = Kind("read", "percentiles", frozenset(), lambda step: PercentileReading(step.scenario))
