"""Step 9's drill: sequences in flight, by Little's law."""

from __future__ import annotations

from dataclasses import replace

from sim.scenario import Scenario

from ..figures import fmt
from .base import DRILL_TOLERANCE, Drill, Kind, Question, Slip, seeded_rng


class InFlightDrill(Drill):
    """Step 9: Little's law, with the seconds per request measured in the simulation."""

    name = "in_flight"
    title = "Sequences in flight"
    MAX_OUTPUT_TOKENS_PER_S = 6200.0  # keep the load well below saturation, where W is steady

    RATES = (8.0, 12.0, 16.0, 20.0, 24.0, 28.0)
    OUTPUTS = (128, 256, 384)
    # The worked answer sends the learner to run the question's traffic (from the start, in real
    # time by default) and watch the mean running batch, averaged since the run started. It starts
    # low while the first requests fill the seats (1-12 % below λ × W at 20 s), and the random
    # arrivals keep it wandering: from SETTLED_AFTER_S on it stays within SETTLED of λ × W (on
    # every question the drill asks, 60-150 s: at most 5.4 % off; within 6 % from 40 s on; 5 %
    # from 150 s on; 2.5 % at ten minutes).
    SETTLED_AFTER_S = 60.0
    SETTLED = 0.06

    def __init__(self, scenario: Scenario, rates=RATES, outputs=OUTPUTS, tolerance: float = 0.05) -> None:
        super().__init__(tolerance)
        self.scenario = scenario
        worked = (float(scenario.workload.request_rate), scenario.workload.output.mean)
        self.cases = [(float(r), int(o)) for r in rates for o in outputs
                      if r * o <= self.MAX_OUTPUT_TOKENS_PER_S and (r, o) != worked]
        """(rate, output length) pairs a question may ask: below the load limit, and never the
        example the lesson works through (its answer is on the screen)."""
        if not self.cases:
            raise ValueError("no rate and output length below the drill's load limit")
        self._measured: dict[tuple[float, int], float] = {}

    def traffic(self, rate: float, output_len: int) -> Scenario:
        w = self.scenario.workload
        return self.scenario.with_workload(request_rate=rate, output=replace(w.output, mean=output_len))

    def seconds_per_request(self, rate: float, output_len: int) -> float:
        """W as the question states it: the mean time in the engine (arrival to last token) at
        this load, measured at its steady state as the lesson's example and the cheat sheet
        measure it (`steps.figures.in_flight`)."""
        key = (rate, output_len)
        if key not in self._measured:
            from ..figures import Lab, in_flight

            measured = in_flight(Lab(self.traffic(rate, output_len)), rate)
            if measured is None:
                raise ValueError(f"{rate:g} req/s with {output_len}-token answers is past saturation")
            self._measured[key] = measured[0]
        return self._measured[key]

    def new_question(self, seed: int) -> Question:
        rng = seeded_rng(seed)
        rate, output_len = self.cases[int(rng.integers(len(self.cases)))]
        return self.question(rate, output_len, in_ms=bool(rng.integers(0, 2)))

    def question(self, rate: float, output_len: int, in_ms: bool = False) -> Question:
        """The question for this load (W given in ms or in s)."""
        w_s = self.seconds_per_request(rate, output_len)
        answer = rate * w_s
        w_text = f"{fmt(w_s * 1000)} ms" if in_ms else f"{fmt(w_s)} s"
        prompt_len = self.scenario.workload.input.mean
        prompt = (f"The helpdesk bot gets **{fmt(rate)} requests/s**, each {prompt_len} tokens in and "
                  f"{output_len} out. Measured at this load, a request spends **{w_text}** in the "
                  "engine, from arrival to its last token.\n\nOn average, how many **sequences** "
                  "are in flight?")
        hints = ("Little's law: sequences in flight = arrival rate × time each spends inside.",
                 f"{fmt(rate)} requests/s × {fmt(w_s)} s" + (" (convert ms to s first)" if in_ms else "") + ".")
        derivation = (f"- in flight = λ × W = {fmt(rate)} requests/s × {fmt(w_s)} s ≈ "
                      f"**{fmt(answer)} sequences**\n"
                      f"- run the traffic: the mean running batch starts low while seats fill, then, "
                      f"after about {self.SETTLED_AFTER_S:g} s, stays within {self.SETTLED:.0%} of "
                      f"{fmt(answer)}.")
        slips = (
            Slip(rate / w_s, "You divided the rate by the time; multiply them instead."),
            Slip(w_s / rate, "You divided the time by the rate; multiply them instead."),
            Slip(answer * 1000.0, "Off by 1,000: convert the time to seconds before multiplying."),
            Slip(answer / 1000.0, "Off by 1,000: the time is in seconds here."),
            Slip(rate, "That is the arrival rate; multiply it by the seconds each request stays."),
        )
        return Question(prompt, answer, "sequences", self.tolerance, hints, derivation, slips,
                        run_dials={"workload.request_rate": rate, "workload.output.mean": output_len},
                        facts={"rate": rate, "output_len": output_len, "seconds": w_s})


def _build(step) -> InFlightDrill:
    p = step.activity.params
    return InFlightDrill(step.scenario, tuple(p.get("rates", InFlightDrill.RATES)),
                         tuple(p.get("outputs", InFlightDrill.OUTPUTS)), p.get("tolerance", DRILL_TOLERANCE))


KIND = Kind("drill", "in_flight", frozenset({"tolerance", "rates", "outputs"}), _build)
