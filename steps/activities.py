"""What the learner does in a step, as pure logic the app drives by keyboard.

- Drills (steps 2, 9, 15, 16): `Drill.new_question(seed) -> Question`; a retry with another seed is
  a new question. `Question.check(text)` parses a typed answer tolerantly and recognises the
  common slips; `hints` (at most two) and, once solved or given up, `derivation_md` with this
  question's own numbers.
- Break-it challenges (steps 3, 8, 10, 14): `goal_md`, and `check(snapshot)` returns a
  `Verdict` (explaining what happened with the numbers seen) once the live metrics reach the goal.
- Predict-then-run: `question_md`, `choices`, `commit(n)`, then `reveal(snapshot)`.
- Reading exercise (step 18): `PercentileReading.new_question(seed) -> Read` with a table from two
  simulated runs; `Read.check(choice_number)`.
- `cheat_sheet_md(scenario)` (step 19) and `save_scenario` / `load_scenario` (step 20).

Imports `sim` (and `steps.figures`, where the numbers in prose come from) only: never textual or
rich. Simulation runs (steps 9 and 18 build their questions from measured runs, step 16 sweeps a
curve, about half a second) take well under a second each; the app should call `new_question`
from a worker.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sim.errors import SimError
from sim.profiles import BUILTIN_PROFILES, Deployment, ProfileSet, load_profiles
from sim.reports import RECENT_GAP_POINTS, EngineSnapshot, recent_worst_gap
from sim.scenario import Scenario

from .figures import PLANNING_HEADROOM, fmt, ms

GIB = 2**30


def _rng(seed: int):
    """A seeded generator. numpy is imported here, not with the module: the app shows a step's
    activity before its first frame and most activities never draw a number."""
    import numpy as np

    return np.random.default_rng(seed)



# ---------------------------------------------------------------------------------------------
# Number formatting and answer parsing
# ---------------------------------------------------------------------------------------------


_NUMBER = re.compile(
    r"""(?P<num>[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|[-+]?\.\d+)   # 209, 1,209, 2.5, .5
        (?:\s*[eE]\s*(?P<exp>[-+]?\d+))?                                # 2.1e2
        \s*(?P<suffix>[kK](?![a-zA-Z]))?                                # 7.9k
    """,
    re.VERBOSE,
)
_MS_UNIT = re.compile(r"\d\s*(ms|msec|millisecond)", re.IGNORECASE)


def parse_number(text: str) -> float | None:
    """The first number in `text` ("209", "209 tok/s", "2.1e2", "≈ 1,209", "7.9k"), or None."""
    if not isinstance(text, str):
        return None
    cleaned = text.replace("\u2212", "-").replace("\u202f", "").replace("\u00a0", "").replace("_", "")
    match = _NUMBER.search(cleaned)
    if not match:
        return None
    value = float(match.group("num").replace(",", ""))
    if match.group("exp"):
        value *= 10.0 ** int(match.group("exp"))
    if match.group("suffix"):
        value *= 1000.0
    return value if math.isfinite(value) else None


# ---------------------------------------------------------------------------------------------
# Drills
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Feedback:
    """What the app shows after an answer (or a choice)."""

    correct: bool
    message: str
    value: float | None = None
    """The number read from the answer; None when none could be read."""
    show_derivation: bool = False
    """True once the question is over (right answer): show `derivation_md` now."""


@dataclass(frozen=True)
class Slip:
    """A common mistake and the answer it leads to."""

    value: float
    message: str


class Question:
    """One drill question. Mutable: it counts attempts and remembers whether it is over."""

    def __init__(self, prompt_md: str, answer: float, unit: str, tolerance: float,
                 hints: tuple[str, ...], derivation_md: str, slips: tuple[Slip, ...] = (),
                 whole_number: bool = False, run_dials: dict | None = None,
                 facts: dict | None = None, accepted: tuple[float, ...] = ()) -> None:
        self.prompt_md = prompt_md
        self.answer = answer
        self.unit = unit
        self.tolerance = tolerance
        self.hints = tuple(hints[:2])
        self.derivation_md = derivation_md
        self.slips = slips
        self.whole_number = whole_number
        self.run_dials = dict(run_dials or {})
        """Dial settings (dotted scenario paths) to run the traffic this question is about."""
        self.facts = dict(facts or {})
        """The question's inputs, for tests and for the app to show."""
        self.accepted = tuple(accepted)
        """Other answers that are right too (a reading of a curve within tolerance)."""
        self.attempts = 0
        self.solved = False
        self.gave_up = False

    @property
    def tolerance_text(self) -> str:
        if self.accepted:
            return f"what a reading of the curve up to {fmt(self.tolerance * 100)}% low gives"
        return f"±{fmt(self.tolerance * 100)}%"

    @property
    def over(self) -> bool:
        return self.solved or self.gave_up

    def is_close(self, value: float, target: float) -> bool:
        return abs(value - target) <= self.tolerance * abs(target)

    def accepts(self, value: float) -> bool:
        if self.is_close(value, self.answer) or value in self.accepted:
            return True
        # A count of sequences: the whole number below or nearest the exact quotient is right too.
        return self.whole_number and value in (math.floor(self.answer), round(self.answer))

    def check(self, text: str) -> Feedback:
        value = parse_number(text)
        if value is None:
            return Feedback(False, f"Type a number, for example {fmt(self.answer * 1.37, 2)} "
                                   f"(the unit, {self.unit}, is optional).")
        self.attempts += 1
        if self.accepts(value):
            self.solved = True
            if self.accepted:
                mine = "" if value == self.answer else f" for your reading of the curve (its last point " \
                                                      f"inside the SLO gives {fmt(self.answer)})"
                return Feedback(True, f"Right{mine}: {fmt(value, 4)} {self.unit}.", value, show_derivation=True)
            return Feedback(True, f"Right: {fmt(self.answer)} {self.unit} "
                                  f"(you typed {fmt(value, 4)}; within {self.tolerance_text}).",
                            value, show_derivation=True)
        if _MS_UNIT.search(text) and self.unit != "ms":
            return Feedback(False, f"That is a time in ms; the question asks for {self.unit}.", value)
        # Two slips can land on the same number; name both rather than guess.
        matched = list(dict.fromkeys(slip.message for slip in self.slips if self.is_close(value, slip.value)))
        if matched:
            return Feedback(False, " Or: ".join(matched[:2]), value)
        direction = "high" if value > self.answer else "low"
        return Feedback(False, f"Not quite: {fmt(value, 4)} is too {direction} "
                               f"(needed within {self.tolerance_text}). Try again or take a hint.", value)

    def hint(self, n: int) -> str:
        """Hint n (0 or 1)."""
        return self.hints[n]

    def give_up(self) -> str:
        self.gave_up = True
        return self.derivation_md


class Drill:
    """A generator of questions of one kind; `new_question(seed)` is deterministic in the seed."""

    name = ""
    title = ""

    def __init__(self, tolerance: float = 0.03) -> None:
        self.tolerance = tolerance

    def new_question(self, seed: int) -> Question:
        raise NotImplementedError


def _article(name: str) -> str:
    """ "a" or "an" before a product name as it is read aloud: an H100, an A100, a B200."""
    return "an" if name[:1].upper() in "AEFHILMNORSX" else "a"


def _ratio_slips(answer: float, pairs: list[tuple[float, str]]) -> tuple[Slip, ...]:
    return tuple(Slip(answer * factor, message) for factor, message in pairs)


def _fits(profiles: ProfileSet, gpu_id: str, model_id: str) -> bool:
    try:
        profiles.deployment(gpu_id, model_id)
    except SimError:
        return False
    return True


class SingleStreamCeilingDrill(Drill):
    """Step 2: bandwidth ÷ weight bytes, or 80% of it, on other GPUs and models."""

    name = "single_stream_ceiling"
    title = "The single-stream ceiling"
    GPUS = ("h100-sxm", "h200", "a100-80gb", "l40s", "b200")
    MODELS = ("llama-3.1-8b", "llama-3.2-3b", "qwen2.5-14b")

    def __init__(self, tolerance: float = 0.03, profiles: ProfileSet | None = None,
                 learner_gpu: str | None = None) -> None:
        super().__init__(tolerance)
        self.profiles = profiles or BUILTIN_PROFILES
        self.learner_gpu = learner_gpu if learner_gpu in self.profiles.gpus else None
        """The learner's GPU (`batchtui --gpu`): every other question, the first among them, is
        its single-stream ceiling."""

    def new_question(self, seed: int) -> Question:
        rng = _rng(seed)
        yours = self.learner_gpu is not None and seed % 2 == 0
        models = self.MODELS
        if yours:  # the models that fit the learner's GPU alone, less the lesson's own example
            models = tuple(m for m in self.MODELS if _fits(self.profiles, self.learner_gpu, m)
                           and (self.learner_gpu, m) != ("h100-sxm", "llama-3.1-8b"))
            yours = bool(models)
            models = models or self.MODELS
        while True:
            gpu = self.profiles.gpu(self.learner_gpu if yours else str(rng.choice(self.GPUS)))
            model = self.profiles.model(str(rng.choice(models)))
            realistic = bool(rng.integers(0, 2))
            if not (gpu.id == "h100-sxm" and model.id == "llama-3.1-8b"):
                break  # the lesson works that one through, both ways
        weights = model.params * model.bytes_per_param
        ceiling = gpu.hbm_bandwidth / weights
        share = self.profiles.deployment(gpu.id, model.id).eta_bw  # what the lesson calls "about 80%"
        pct = fmt(share * 100)
        answer = ceiling * share if realistic else ceiling
        bw_tb = gpu.hbm_bandwidth / 1e12
        where = (f"**your GPU**, {_article(gpu.name)} {gpu.name}" if yours
                 else f"{_article(gpu.name)} **{gpu.name}**")
        setup = (f"**{model.name}** ({fmt(model.params / 1e9)} B parameters, bf16) decodes one "
                 f"sequence alone on {where} (memory bandwidth {fmt(bw_tb, 4)} TB/s).")
        if realistic:
            ask = (f"Real servers stream weights at about {pct}% of the rated bandwidth. About how "
                   "many **tokens/s** does this one sequence get?")
        else:
            ask = "What is its single-stream decode **ceiling**, in tokens/s?"
        hints = (
            "Each token needs one full read of the weights: tokens/s = bandwidth ÷ weight bytes"
            + (f", then take {pct}% of that." if realistic else "."),
            f"Weights = {fmt(model.params / 1e9)} B × {fmt(model.bytes_per_param)} bytes = {fmt(weights / 1e9)} GB. "
            f"Divide {fmt(gpu.hbm_bandwidth / 1e9, 4)} GB/s by it.",
        )
        lines = [
            f"- weights = {fmt(model.params / 1e9)} B parameters × {fmt(model.bytes_per_param)} bytes (bf16) = "
            f"**{fmt(weights / 1e9)} GB**",
            f"- ceiling = {fmt(bw_tb, 4)} TB/s ÷ {fmt(weights / 1e9)} GB = "
            f"{fmt(gpu.hbm_bandwidth / 1e9, 4)} GB/s ÷ {fmt(weights / 1e9)} GB ≈ "
            f"**{fmt(ceiling)} tokens/s**",
        ]
        if realistic:
            lines.append(f"- at {pct}% of the bandwidth: {share:g} × {fmt(ceiling)} ≈ **{fmt(answer)} tokens/s**")
        else:
            lines.append(f"- a real server reaches about {pct}% of that: ≈ {fmt(ceiling * share)} tokens/s")
        lines.append(f"- one token every 1000 ÷ {fmt(answer)} ≈ {fmt(1000 / answer)} ms")
        gib = (f"GB and GiB got mixed: {fmt(weights / 1e9)} GB is {fmt(weights / GIB)} GiB, and "
               "TB/s is decimal too. Keep both in decimal units.")
        pairs = [
            (GIB / 1e9, gib),
            (1e12 / 2**40, gib),
            (2.0, "Twice too high: bf16 takes 2 bytes per parameter, so the weights are "
                  f"{fmt(weights / 1e9)} GB, not {fmt(model.params / 1e9)} GB."),
            (0.5, "Half the answer: bf16 is 2 bytes per parameter, not 4."),
            (1000.0, "Off by a factor of 1,000: check TB/s (10¹²) against GB (10⁹)."),
            (0.001, "Off by a factor of 1,000: check TB/s (10¹²) against GB (10⁹)."),
        ]
        if realistic:
            pairs.append((1 / share, "That is the full ceiling: the question asks what a real server gets, "
                                     f"about {pct}% of it."))
        else:
            pairs.append((share, f"That is the {pct}% figure a real server reaches; the question asks for "
                                  "the ceiling itself."))
        slips = list(_ratio_slips(answer, pairs))
        slips.append(Slip(1000.0 / answer, "That looks like milliseconds per token; the question "
                                            "asks for tokens per second (1000 ÷ your number)."))
        if realistic:
            slips.append(Slip(1000.0 / ceiling, "That looks like milliseconds per token; the question "
                                                 "asks for tokens per second."))
        return Question(
            prompt_md=f"{setup}\n\n{ask}",
            answer=answer, unit="tokens/s", tolerance=self.tolerance, hints=hints,
            derivation_md="\n".join(lines), slips=tuple(slips),
            run_dials={"gpu": gpu.id, "model": model.id},
            facts={"gpu": gpu.id, "model": model.id, "realistic": realistic, "ceiling": ceiling},
        )


class InFlightDrill(Drill):
    """Step 9: Little's law, with the seconds per request measured in the simulation."""

    name = "in_flight"
    title = "Sequences in flight"
    MAX_OUTPUT_TOKENS_PER_S = 6200.0  # keep the load well below saturation, where W is steady

    RATES = (8.0, 12.0, 16.0, 20.0, 24.0, 28.0)
    OUTPUTS = (128, 256, 384)

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
            from .figures import Lab, in_flight

            measured = in_flight(Lab(self.traffic(rate, output_len)), rate)
            if measured is None:
                raise ValueError(f"{rate:g} req/s with {output_len}-token answers is past saturation")
            self._measured[key] = measured[0]
        return self._measured[key]

    def new_question(self, seed: int) -> Question:
        rng = _rng(seed)
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
                      f"- run the traffic: the mean running batch should settle within a few per cent "
                      f"of {fmt(answer)}.")
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


class CacheBatchDrill(Drill):
    """Step 15: cache tokens ÷ tokens per sequence, on other GPUs, memory settings and lengths."""

    name = "cache_batch"
    title = "The batch the cache allows"
    GPUS = ("h100-sxm", "h200", "a100-80gb", "l40s", "b200")
    MODELS = ("llama-3.1-8b", "llama-3.2-3b", "qwen2.5-14b")
    UTILISATIONS = (0.80, 0.85, 0.88, 0.90, 0.92, 0.95)
    PROMPTS = (1024, 2048, 4096, 8192, 16384)
    OUTPUTS = (256, 512, 1024, 2048)

    def __init__(self, tolerance: float = 0.03, profiles: ProfileSet | None = None,
                 worked: tuple | None = None) -> None:
        super().__init__(tolerance)
        self.profiles = profiles or BUILTIN_PROFILES
        self.worked = worked
        """(gpu, model, utilisation, prompt, output) the lesson works through: never asked."""

    def _draw(self, rng) -> tuple[Deployment, int, int]:
        while True:
            gpu = str(rng.choice(self.GPUS))
            model = self.profiles.model(str(rng.choice(self.MODELS)))
            util = float(rng.choice(self.UTILISATIONS))
            prompt = int(rng.choice(self.PROMPTS))
            output = int(rng.choice(self.OUTPUTS))
            if prompt + output > model.max_model_len or (gpu, model.id, util, prompt, output) == self.worked:
                continue
            try:
                dep = self.profiles.deployment(gpu, model.id, gpu_memory_utilization=util)
            except SimError:
                continue  # the model does not fit this GPU at this setting
            if dep.kv_cache_tokens / (prompt + output) >= 4:
                return dep, prompt, output

    def new_question(self, seed: int) -> Question:
        return self.question(*self._draw(_rng(seed)))

    def question(self, dep: Deployment, prompt: int, output: int) -> Question:
        """The question for this deployment and these lengths."""
        gpu, model = dep.gpu, dep.model
        per_seq = prompt + output
        answer = dep.kv_cache_tokens / per_seq
        weights = dep.weight_bytes
        kv_per_token = dep.kv_bytes_per_token
        util = dep.gpu_memory_utilization
        kv_mem = util * gpu.memory_bytes - weights - dep.reserve_bytes
        prompt_md = (
            f"**{model.name}** in bf16 on one **{gpu.name}**, `--gpu-memory-utilization {util:g}`.\n\n"
            f"| | |\n|---|---|\n"
            f"| GPU memory (as CUDA reports it) | {fmt(gpu.memory_bytes / 1e9)} GB ({fmt(gpu.memory_bytes / GIB)} GiB) |\n"
            f"| weights | {fmt(model.params / 1e9)} B parameters × 2 bytes |\n"
            f"| reserve (activations, graphs) | {fmt(dep.reserve_bytes / 1e9)} GB |\n"
            f"| model shape | {model.layers} layers, {model.kv_heads} KV heads, head dim {model.head_dim} |\n"
            f"| each request | {prompt:,} tokens in, {output:,} out |\n\n"
            "How many such **sequences** can the KV cache hold at once, all at full length?"
        )
        hints = (
            "KV memory = utilisation × GPU memory − weights − reserve; KV bytes per token = "
            "2 × layers × KV heads × head dim × 2 bytes.",
            f"Here {util:g} × {fmt(gpu.memory_bytes / 1e9)} GB − {fmt(weights / 1e9)} GB − "
            f"{fmt(dep.reserve_bytes / 1e9)} GB ≈ {fmt(kv_mem / 1e9)} GB, and {kv_per_token:,} bytes "
            f"per token; divide, then divide by {per_seq:,}.",
        )
        derivation = "\n".join([
            f"- KV memory = {util:g} × {fmt(gpu.memory_bytes / 1e9)} GB − {fmt(weights / 1e9)} GB − "
            f"{fmt(dep.reserve_bytes / 1e9)} GB ≈ **{fmt(kv_mem / 1e9)} GB**",
            f"- KV per token = 2 × {model.layers} × {model.kv_heads} × {model.head_dim} × 2 B = "
            f"**{kv_per_token:,} B** ({fmt(kv_per_token / 1024)} KiB)",
            f"- cache = {fmt(kv_mem / 1e9)} GB ÷ {kv_per_token:,} B ≈ **{fmt(dep.kv_cache_tokens)} tokens** "
            f"({dep.usable_blocks:,} blocks of {dep.block_size})",
            f"- batch = {fmt(dep.kv_cache_tokens)} ÷ ({prompt:,} + {output:,}) ≈ **{fmt(answer)} sequences**",
            f"- vLLM admits on the prompt's blocks, so up to {fmt(dep.kv_cache_tokens / prompt)} may start "
            "before preemptions trim the batch back.",
        ])

        def batch(memory: float, reserve: float = dep.reserve_bytes, kv: float = kv_per_token,
                  tokens: int = per_seq, w: float = weights) -> float:
            return max(0.0, memory - w - reserve) / kv / tokens

        slips = (
            Slip(batch(gpu.memory_bytes), "You used all the GPU's memory: vLLM takes only "
                                          f"--gpu-memory-utilization ({util:g}) of it."),
            Slip(batch(util * gpu.memory_bytes, reserve=0.0),
                 f"Remember the reserve: {fmt(dep.reserve_bytes / 1e9)} GB stays outside the cache."),
            Slip(batch(util * gpu.memory_bytes, w=0.0),
                 f"The weights ({fmt(weights / 1e9)} GB) take their share of memory first."),
            Slip(batch(util * gpu.memory_bytes, tokens=prompt),
                 "You divided by the prompt only; a sequence ends holding prompt + output tokens."),
            Slip(answer * 2.0, "Twice too many: KV per token counts both K and V, each 2 bytes in bf16."),
            Slip(answer / 2.0, "Half the answer: KV entries are 2 bytes each in bf16, not 4."),
            Slip(batch(util * gpu.memory_bytes / GIB * 1e9),
                 "GB and GiB got mixed: CUDA's total is in bytes; "
                 f"{fmt(gpu.memory_bytes / GIB)} GiB is {fmt(gpu.memory_bytes / 1e9)} GB."),
            Slip(answer * model.kv_heads / model.q_heads,
                 f"Use the KV heads ({model.kv_heads}), not the query heads ({model.q_heads}): "
                 "grouped-query attention keeps fewer KV heads."),
        )
        return Question(prompt_md, answer, "sequences", self.tolerance, hints, derivation, slips,
                        whole_number=True,
                        run_dials={"gpu": gpu.id, "model": model.id, "gpu_memory_utilization": util,
                                   "workload.input.mean": prompt, "workload.output.mean": output},
                        facts={"gpu": gpu.id, "model": model.id, "util": util, "prompt": prompt,
                               "output": output, "cache_tokens": dep.kv_cache_tokens})


class ReplicasDrill(Drill):
    """Step 16: read the SLO rate off the step's rate curve, then
    replicas = ⌈peak ÷ (headroom × SLO rate)⌉. The curve is swept exactly as the app sweeps it
    (`sim.curves.rate_sweep` over the step's [sweep]), so the learner's reading and the check
    agree; any reading of the SLO rate within the tolerance below the curve's answer, up to the
    saturated rate, counts."""

    name = "replicas"
    title = "Replicas for a chat SLO"
    PEAKS = (60.0, 100.0, 150.0, 200.0, 250.0, 300.0, 400.0)
    SEATS = (256, 128, 64)

    def __init__(self, scenario: Scenario, sweep, tolerance: float = 0.1) -> None:
        super().__init__(tolerance)
        if sweep is None or not sweep.rates or sweep.slo_ttft_p99_ms is None:
            raise ValueError("the replicas drill needs a rate sweep with an SLO")
        self.scenario = scenario
        self.sweep = sweep
        self._curves: dict[int, tuple[float, list]] = {}

    def curve(self, seats: int) -> tuple[float, list]:
        """(saturated rate, the rate points) of the step's curve at `seats` seats."""
        if seats not in self._curves:
            from sim.curves import rate_sweep

            self._curves[seats] = rate_sweep(self.scenario.with_engine(max_num_seqs=seats), self.sweep.rates,
                                             min_window=self.sweep.num_prompts)
        return self._curves[seats]

    def meets(self, point) -> bool:
        """Whether a rate point meets the SLO: a steady state inside both percentiles."""
        w = point.window
        return (point.bounded and w["p99_ttft_ms"] <= self.sweep.slo_ttft_p99_ms
                and (self.sweep.slo_tpot_p99_ms is None or w["p99_tpot_ms"] <= self.sweep.slo_tpot_p99_ms))

    def slo_rate(self, seats: int):
        """The highest rate of the curve that meets the SLO, every lower one meeting it too, and
        the first that misses (None if none does): (point, next point)."""
        _, points = self.curve(seats)
        best = None
        for i, point in enumerate(points):
            if not self.meets(point):
                return best, point
            best = point
        return best, None

    def new_question(self, seed: int) -> Question:
        rng = _rng(seed)
        peak = float(rng.choice(self.PEAKS))
        seats = int(rng.choice(self.SEATS))
        saturated, _ = self.curve(seats)
        best, miss = self.slo_rate(seats)
        if best is None:
            raise ValueError(f"no rate of the sweep meets the SLO with {seats} seats")
        per_replica = PLANNING_HEADROOM * best.rate
        answer = math.ceil(peak / per_replica)
        low = (1 - self.tolerance) * best.rate
        high = min(saturated, miss.rate) if miss is not None else saturated
        accepted = tuple(range(math.ceil(peak / (PLANNING_HEADROOM * high)),
                               math.ceil(peak / (PLANNING_HEADROOM * low)) + 1))
        slo = f"TTFT p99 ≤ {fmt(self.sweep.slo_ttft_p99_ms)} ms" + (
            f" and TPOT p99 ≤ {fmt(self.sweep.slo_tpot_p99_ms)} ms" if self.sweep.slo_tpot_p99_ms else "")
        headroom = fmt(PLANNING_HEADROOM * 100)
        dial = "" if seats == self.scenario.engine_config().max_num_seqs else \
            f" Set the **seats** dial to {seats} first: the curve sweeps again."
        prompt = (f"The helpdesk's peak is **{fmt(peak)} requests/s**, and each replica runs with "
                  f"**{seats} seats**.{dial} Read off the curve the highest rate that meets {slo}, plan "
                  f"each replica at {headroom}% of it, and say how many **replicas** the peak needs.")
        hints = (f"The SLO rate is the last point below the {fmt(self.sweep.slo_ttft_p99_ms)} ms line before "
                 "the curve leaves it or the queue runs away (the arrows).",
                 f"replicas = ⌈peak ÷ ({PLANNING_HEADROOM:g} × SLO rate)⌉: round up, a replica is whole.")
        w = best.window
        lines = [f"- The curve meets the SLO up to **{fmt(best.rate)} req/s** (TTFT p99 "
                 f"{fmt(w['p99_ttft_ms'])} ms, TPOT p99 {fmt(w['p99_tpot_ms'])} ms)"
                 + (f"; at {fmt(miss.rate)} req/s " + ("the queue grows without bound" if not miss.bounded
                                                        else f"TTFT p99 is {fmt(miss.window['p99_ttft_ms'])} ms")
                    if miss is not None else "") + f". It saturates at {fmt(saturated)} req/s.",
                 f"- Each replica at {headroom}%: {PLANNING_HEADROOM:g} × {fmt(best.rate)} = "
                 f"{fmt(per_replica)} req/s.",
                 f"- replicas = ⌈{fmt(peak)} ÷ {fmt(per_replica)}⌉ = ⌈{fmt(peak / per_replica)}⌉ = **{answer}**."]
        if len(accepted) > 1:
            lines.append(f"- A reading of {fmt(low)} to {fmt(high)} req/s gives "
                         f"{' or '.join(str(a) for a in accepted)}: any of them counts.")
        slips = (
            Slip(math.ceil(peak / best.rate), f"Leave headroom: plan each replica at {headroom}% of its SLO rate."),
            Slip(peak / per_replica, "Round up: a replica is a whole GPU."),
            Slip(per_replica, "That is one replica's planned rate; divide the peak by it."),
            Slip(best.rate, "That is the SLO rate itself; the question asks for replicas."),
        )
        return Question(prompt, float(answer), "replicas", self.tolerance, hints, "\n".join(lines),
                        tuple(s for s in slips if s.value not in accepted), whole_number=True,
                        run_dials={"engine.max_num_seqs": seats},
                        facts={"peak": peak, "seats": seats, "slo_rate": best.rate, "saturated": saturated,
                               "reading_low": low, "reading_high": high},
                        accepted=tuple(float(a) for a in accepted))


# ---------------------------------------------------------------------------------------------
# Break-it challenges
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    title: str
    message_md: str


class BreakIt:
    """Watches snapshots; once the goal is reached, `check` returns the same Verdict every time."""

    name = ""
    goal_md = ""

    def __init__(self) -> None:
        self.verdict: Verdict | None = None

    def reset(self) -> None:
        self.verdict = None

    def check(self, snapshot: EngineSnapshot) -> Verdict | None:
        if self.verdict is None:
            self.observe(snapshot)
            if self.reached(snapshot):
                self.verdict = self.explain(snapshot)
        return self.verdict

    def observe(self, snapshot: EngineSnapshot) -> None:
        """Remember what the calm state looked like, to compare with later."""

    def reached(self, snapshot: EngineSnapshot) -> bool:
        raise NotImplementedError

    def explain(self, snapshot: EngineSnapshot) -> Verdict:
        raise NotImplementedError


class StaticPeakChallenge(BreakIt):
    """Step 3: static batches pushed to peak; TTFT p99 passes a goal."""

    name = "static_peak"

    def __init__(self, ttft_p99_goal_s: float = 10.0) -> None:
        super().__init__()
        self.goal = ttft_p99_goal_s
        self.goal_md = (f"Raise the traffic until **TTFT p99 passes {fmt(self.goal)} s** with static "
                        "batches.")

    def reached(self, s: EngineSnapshot) -> bool:
        return s.metrics.completed >= 20 and s.metrics.ttft_p99 >= self.goal

    def explain(self, s: EngineSnapshot) -> Verdict:
        m = s.metrics
        return Verdict("Broken: newcomers wait for whole batches", (
            f"TTFT p99 reached **{fmt(m.ttft_p99)} s** while the server finished "
            f"{fmt(m.requests_per_s)} requests/s. **{fmt(m.padding_share * 100)}%** of seat-iterations "
            f"were padding: seats held by answers already finished, computing tokens nobody reads. "
            f"With {s.queue_len} requests queued, a newcomer waits for the batch in progress and "
            "then for every batch ahead of it before its prompt is even read."))


class PastKneeChallenge(BreakIt):
    """Step 8: past saturation, TTFT explodes while tokens/s and TPOT hold still."""

    name = "past_knee"

    def __init__(self, ttft_p99_goal_s: float = 2.0, min_queue: int = 50) -> None:
        super().__init__()
        self.goal = ttft_p99_goal_s
        self.min_queue = min_queue
        self.full_tokens_per_s = 0.0
        self.full_tpot = 0.0
        self.goal_md = (f"Push the traffic past saturation until **TTFT p99 passes {fmt(self.goal)} s** "
                        f"and at least {min_queue} requests wait.")

    def observe(self, s: EngineSnapshot) -> None:
        # "Before" is taken where the claim is about: the seats already full (saturated), the
        # queue still short; not at the calm rate below the knee.
        if s.running >= s.max_num_seqs - 2 and 0 < s.queue_len < self.min_queue // 2 and s.metrics.completed >= 20:
            self.full_tokens_per_s = s.metrics.output_tokens_per_s
            self.full_tpot = s.metrics.tpot_p50

    def reached(self, s: EngineSnapshot) -> bool:
        return s.metrics.ttft_p99 >= self.goal and s.queue_len >= self.min_queue

    def explain(self, s: EngineSnapshot) -> Verdict:
        m = s.metrics
        before = ""
        if self.full_tokens_per_s:
            before = (f" When the seats had just filled, with a short queue, it made "
                      f"{fmt(self.full_tokens_per_s)} tokens/s at a TPOT p50 of {ms(self.full_tpot)}.")
        return Verdict("Broken: past the knee only the queue grows", (
            f"TTFT p99 is **{fmt(m.ttft_p99)} s** with **{s.queue_len} requests waiting**, while the "
            f"engine makes {fmt(m.output_tokens_per_s)} tokens/s at a TPOT p50 of {ms(m.tpot_p50)}, "
            f"with {s.running} of {s.max_num_seqs} seats busy.{before} Past saturation more traffic "
            "adds no throughput and no speed, only waiting, and the wait grows every second."))


class LongPromptStallChallenge(BreakIt):
    """Step 10: one long prefill stalls every decoding user."""

    name = "long_prompt_stall"

    def __init__(self, gap_ratio_goal: float = 20.0) -> None:
        super().__init__()
        self.ratio = gap_ratio_goal
        self.goal_md = (f"Make the **worst gap between two tokens** more than {fmt(self.ratio)} times "
                        "the typical time per token (TPOT p50).")

    def reached(self, s: EngineSnapshot) -> bool:
        m = s.metrics
        return m.completed >= 20 and m.tpot_p50 > 0 and m.itl_max >= self.ratio * m.tpot_p50

    def explain(self, s: EngineSnapshot) -> Verdict:
        m = s.metrics
        return Verdict("Broken: a long prompt stalled the stream", (
            f"The worst gap between two tokens was **{ms(m.itl_max)}**, "
            f"{fmt(m.itl_max / m.tpot_p50)} times the typical {ms(m.tpot_p50)} per token. That "
            "iteration carried a long prefill, and every user mid-answer waited for all of it. "
            f"TPOT p99 is only {ms(m.tpot_p99)}: averaged over a whole answer, one stall hardly shows."))


class CacheCapChallenge(BreakIt):
    """Step 14: the KV cache, not the seats, caps the batch; preemptions happen."""

    name = "cache_cap"

    def __init__(self, block_size: int = 16, prompt_len: int = 8192, output_len: int = 1024) -> None:
        super().__init__()
        self.block_size = block_size
        self.prompt_len = prompt_len
        self.output_len = output_len
        self.goal_md = ("Raise the traffic until the **KV cache is full** and the engine **preempts** a "
                        "sequence while seats are still free.")

    def reached(self, s: EngineSnapshot) -> bool:
        return s.metrics.num_preemptions > 0 and s.running < s.max_num_seqs

    def explain(self, s: EngineSnapshot) -> Verdict:
        cache_tokens = s.kv_blocks_usable * self.block_size
        used = s.kv_blocks_used / s.kv_blocks_usable if s.kv_blocks_usable else 0.0
        upper = cache_tokens / self.prompt_len
        lower = cache_tokens / (self.prompt_len + self.output_len)
        return Verdict("Broken: the cache caps the batch", (
            f"**{s.metrics.num_preemptions} preemption{'' if s.metrics.num_preemptions == 1 else 's'}** so far, with **{s.running} sequences "
            f"running of {s.max_num_seqs} seats**. The cache holds {fmt(cache_tokens)} tokens and is "
            f"{fmt(used * 100)}% full. It admits up to {fmt(cache_tokens)} ÷ {self.prompt_len:,} ≈ "
            f"{fmt(upper)} prompts, but only {fmt(cache_tokens)} ÷ {self.prompt_len + self.output_len:,} ≈ "
            f"{fmt(lower)} can grow to full length together: as they grow, the newest is evicted and "
            "later recomputed. The seat cap never comes into play."))


# ---------------------------------------------------------------------------------------------
# Predict-then-run
# ---------------------------------------------------------------------------------------------

RECENT_GAP_SAMPLES = RECENT_GAP_POINTS
"""Series points the "recent" worst gap looks back over (`sim.reports.recent_worst_gap`)."""


_SHOW = {
    "queue_len": ("queue", lambda s: f"{s.queue_len}"),
    "running": ("running", lambda s: f"{s.running}"),
    "requests_per_s": ("requests/s", lambda s: fmt(s.metrics.requests_per_s)),
    "output_tokens_per_s": ("tokens/s", lambda s: fmt(s.metrics.output_tokens_per_s)),
    "ttft_p50": ("TTFT p50", lambda s: ms(s.metrics.ttft_p50)),
    "ttft_p99": ("TTFT p99", lambda s: ms(s.metrics.ttft_p99)),
    "tpot_p50": ("TPOT p50", lambda s: ms(s.metrics.tpot_p50)),
    "tpot_p99": ("TPOT p99", lambda s: ms(s.metrics.tpot_p99)),
    "itl_max": ("worst gap", lambda s: ms(recent_worst_gap(s))),
    "e2e_p50": ("end-to-end p50", lambda s: ms(s.metrics.e2e_p50)),
    "padding_share": ("padding", lambda s: f"{fmt(s.metrics.padding_share * 100)}%"),
    "mean_running": ("mean running", lambda s: fmt(s.metrics.mean_running)),
    "num_preemptions": ("preemptions", lambda s: f"{s.metrics.num_preemptions}"),
}


class Predict:
    """Commit to a guess (a choice number), then run and compare."""

    def __init__(self, question_md: str, choices: tuple[str, ...], answer: int, explain: str,
                 show: tuple[str, ...] = (), compute: str = "", scenario: Scenario | None = None,
                 run_dials: dict | None = None, watch_seconds: float = 20.0, compare_label: str = "",
                 run_note: str = "", batches: tuple[int, int] = (1, 64), context: int = 640) -> None:
        self.question_md = question_md
        self.choices = choices
        self.answer = answer
        self.explain = explain
        self.show = show
        self.compute = compute
        self.scenario = scenario
        self.run_dials = dict(run_dials or {})
        """Dials (dotted scenario paths) the run is made with once the guess is in: the setting
        the question asks about, if the step does not start there."""
        self.watch_seconds = watch_seconds
        self.compare_label = compare_label
        self.run_note = run_note
        """The run's settings in words ("Token budget 512 tokens"), said with the numbers."""
        """What the step's side-by-side run is called, if it has one."""
        """Simulated seconds the run goes on after the guess before the answer is revealed."""
        self.batches = batches
        """The two decode batch sizes a `batch_gain` prediction compares, and their context."""
        self.context = context
        self.guess: int | None = None

    @property
    def ends_with_job(self) -> bool:
        """The run is a finite job: the answer comes when it ends, if before watch_seconds."""
        return self.scenario is not None and self.scenario.workload.num_prompts > 0

    def wait_words(self) -> str:
        """When the answer shows, as the learner is told: the moment it really does."""
        after = f"after {self.watch_seconds:g} simulated s"
        return f"when the job ends or {after}" if self.ends_with_job else after

    def commit(self, guess: int) -> str:
        if not 1 <= guess <= len(self.choices):
            raise ValueError(f"choose 1 to {len(self.choices)}")
        self.guess = guess
        return f"Your guess: {guess}. {_sentence(self.choices[guess - 1])} The run starts now: watch it."

    def live_numbers(self, snapshot: EngineSnapshot | None, other: EngineSnapshot | None = None) -> str:
        def figures(snap: EngineSnapshot) -> str:
            return ", ".join(f"{_SHOW[key][0]} {_SHOW[key][1](snap)}" for key in self.show)

        text = figures(snapshot) if snapshot is not None else ""
        if text and other is not None and self.compare_label:
            # A side-by-side step: the answer is in the difference, so give both runs.
            text = f"this server: {text}; {self.compare_label[0].lower()}{self.compare_label[1:]}: {figures(other)}"
        if self.compute == "batch_gain" and self.scenario is not None:
            from sim.cost import CostModel

            cost = CostModel(self.scenario.deployment())
            (a, b), context = self.batches, self.context
            one, many = cost.iteration(a, a * context).total, cost.iteration(b, b * context).total
            text = (f"batch {a}: {ms(one)} per iteration, {fmt(a / one)} tokens/s; batch {b}: {ms(many)}, "
                    f"{fmt(b / many)} tokens/s: {fmt(b * one / (a * many))} times the output for "
                    f"{fmt((many / one - 1) * 100)}% more time per token")
        if self.compute == "offline_gain" and snapshot is not None and other is not None:
            # Job against job: requests done by the same moment (tokens/s over the last seconds
            # of a job that is ending would mislead). Best read when this job has finished.
            a, b = snapshot.metrics.completed, other.metrics.completed
            if a and b:
                ended = "finished its" if snapshot.finished else "had done"
                text = (f"this setting {ended} {a:,} requests in {fmt(snapshot.time)} s; the other had done "
                        f"{b:,} by then, so at its pace the same work takes about "
                        f"{fmt(snapshot.time * a / b)} s: {fmt(a / b)} times as long")
        return text

    def reveal(self, guess: int | None, snapshot: EngineSnapshot | None = None,
               other: EngineSnapshot | None = None) -> str:
        guess = self.guess if guess is None else guess
        right = guess == self.answer
        head = "You called it." if right else f"Not this time: the answer is {self.answer}."
        numbers = self.live_numbers(snapshot, other)
        where = f", with {self.run_note}" if self.run_note else ""
        # A reading at one moment, said so: the live panes go on moving after it.
        at = f" at t {fmt(snapshot.time)} s" if snapshot is not None else ""
        tail = f"\n\nIn the simulation{where}{at}: {numbers}." if numbers else ""
        return f"{head} {_sentence(self.choices[self.answer - 1])}\n\n{self.explain}{tail}"


# ---------------------------------------------------------------------------------------------
# Reading exercise (step 18)
# ---------------------------------------------------------------------------------------------

READ_CHOICES = (
    "Queueing: the engine is at capacity. Add replicas or shed load.",
    "Heavier iterations: a bigger batch or long prefills. Look at the traffic mix, the budget, the seats.",
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

        rng = _rng(seed)
        case = self.CASES[seed % len(self.CASES)]  # consecutive retries meet every diagnosis
        before_sc, after_sc, change = self.case_runs(case, rng)
        before, after = run_scenario(before_sc).pools, run_scenario(after_sc).pools
        rows = []
        figures = {}
        for pool in ("chat", "batch"):
            if pool not in before and pool not in after:
                continue
            for key, label in (("median_ttft_ms", "TTFT p50"), ("p99_ttft_ms", "TTFT p99"),
                               ("median_tpot_ms", "TPOT p50"), ("p99_tpot_ms", "TPOT p99")):
                b = before.get(pool, {}).get(key)
                a = after.get(pool, {}).get(key)
                figures[(pool, key)] = (b, a)
                rows.append(f"| {pool} {label} | {_ms_cell(b)} | {_ms_cell(a)} |")
        # Runs of their own, not the live pane's: said above the table, so no figure in it reads
        # as a second value for one the panes show.
        table = ("Two runs of another server (not the live pane), before and after a change:\n\n"
                 "| ms | before | after |\n|---|---|---|\n" + "\n".join(rows))
        answer = {"queueing": 1, "heavier": 2, "steady": 3}[case]
        ttft = figures[("chat", "p99_ttft_ms")]
        tpot = figures[("chat", "p99_tpot_ms")]
        explanation = (f"What happened: {change}. Chat TTFT p99 went from {_ms_cell(ttft[0])} to "
                       f"{_ms_cell(ttft[1])} ms and TPOT p99 from {_ms_cell(tpot[0])} to "
                       f"{_ms_cell(tpot[1])} ms. ")
        explanation += {
            1: "TTFT rising with TPOT flat means requests wait for a seat: the batch is already as "
               "big as it gets.",
            2: "TPOT rising means every iteration carries more: a bigger batch, or long prefills "
               "sharing the iterations.",
            3: "Percentiles wobble from run to run; a change of a few per cent is noise.",
        }[answer]
        return Read(table, READ_CHOICES, answer, explanation, case=case, figures=figures)


def _ms_cell(value: float | None) -> str:
    return "–" if value is None else fmt(value, 3)


# ---------------------------------------------------------------------------------------------
# Cheat sheet (step 19)
# ---------------------------------------------------------------------------------------------


CHEAT_SHEET_MD = """\
### {{model_name}} on {{gpu_name}}

- **Ceiling** = bandwidth ÷ weight bytes: {{bandwidth_tb}} TB/s ÷ {{weights_gb}} GB ≈ **{{ceiling}} tok/s**
  (real ≈ {{real_share_pct}}%: {{ceiling_real}}).
- **One request** = prefill + (out − 1) × TPOT: {{prefill_ms}} ms + {{decode_steps}} × {{tpot_ms}} ms ≈
  {{request_s}} s alone.
- {{in_flight_line}}
- **Cache tokens** = (util × memory − weights − reserve) ÷ KV per token:
  ({{memory_utilization}} × {{gpu_memory_gb}} − {{weights_gb}} − {{reserve_gb}}) GB ÷ {{kv_kib_per_token}} KiB ≈ **{{cache_tokens}}**.
- **Cache batch** = cache tokens ÷ (in + out): {{cache_tokens}} ÷ {{per_sequence}} ≈ **{{cache_batch}}**.
- **Replicas** = ⌈peak ÷ ({{headroom}} × SLO rate)⌉, the SLO rate read off a sweep (step 16). It is below
  the saturated rate, {{saturated_rate}} req/s here, so a peak of {{cheat_peak}} req/s needs more than
  {{cheat_peak}} ÷ ({{headroom}} × {{saturated_rate}}) ≈ {{cheat_replicas_floor}} replicas.
- **Shared prefix** (prefix caching, on in vLLM by default): prompt tokens already in the cache, in
  whole blocks, are not computed again. The helpdesk as a chat ({{helpdesk_prefix}}-token system prompt,
  {{helpdesk_turns}} turns, each resending the history) finds **{{helpdesk_hit_pct}}%** of its prompt
  tokens cached: TTFT p50 {{helpdesk_ttft_on_ms}} ms, against {{helpdesk_ttft_off_ms}} ms with caching off.

**Tuning order**: `--max-num-batched-tokens` (the TPOT you accept), then `--max-num-seqs` (the batch
λ × W needs), then the KV cache (`--gpu-memory-utilization`) to hold that batch.

**Chat, with an SLO**: {{chat_seats_line}}; a modest token budget protects TPOT; watch TTFT p99 and
TPOT p99 per pool.

**An offline job**: seats up to the cache batch (≈ {{cache_batch}}); a large token budget for big
prefills; watch tokens/s and the job's time.
"""
"""The recap, worked for the live profile by the same figures the lessons state (steps.figures)."""


def cheat_sheet_md(scenario: Scenario) -> str:
    """The recap with every formula worked for this scenario's GPU, model, memory setting and
    traffic: the ceiling and one request (step 1), the batch in flight at its rate measured as
    step 9 measures it, the cache batch as step 15 counts it, the replicas bound of step 16, and
    what a shared prefix saves the multi-turn helpdesk. Takes about a tenth of a second (a
    saturated run, one steady rate, the helpdesk with caching on and off)."""
    from .figures import Lab, fill

    return fill(CHEAT_SHEET_MD, Lab(scenario))


# ---------------------------------------------------------------------------------------------
# Playground (step 20)
# ---------------------------------------------------------------------------------------------


def save_scenario(scenario: Scenario, path: str | Path) -> str:
    """Write the scenario to a TOML file; returns a message for the learner."""
    try:
        scenario.save(path)
    except OSError as exc:
        return f"Could not save to {path}: {exc.strerror or exc}."
    return f"Saved the scenario to {path}."


def load_scenario(path: str | Path, current: Scenario) -> tuple[Scenario, str, bool]:
    """Read a scenario file. On any problem the current scenario is returned unchanged, with a
    message saying what was wrong; the bool says whether the file was loaded."""
    try:
        loaded = Scenario.load(path)
        loaded.deployment()
        loaded.engine_config()
        loaded.workload.validate()
    except (SimError, TypeError, ValueError) as exc:
        return current, f"Kept the current scenario: {exc}", False
    return loaded, f"Loaded the scenario from {path}.", True


@dataclass(frozen=True)
class WorkloadSwitch:
    """The playground's `m`: the traffic it switches to and the dials that get it there."""

    name: str
    """What the traffic is called on screen: "the multi-turn helpdesk" or "single-turn traffic"."""
    multi_turn: bool
    """True when it switches to the multi-turn helpdesk."""
    settings: dict
    """Dial path (`sim.dials`) -> value for every traffic setting that changes, in an order in
    which each one is accepted after those before it (the engine's `set_dial` takes them so)."""
    scenario: Scenario
    """The scenario once they are all set."""


def helpdesk_switch(step, current: Scenario, before: Scenario | None = None) -> WorkloadSwitch:
    """What `m` does in the playground from `current`: single-turn traffic becomes the
    multi-turn helpdesk (`sim.workload.MULTI_TURN_HELPDESK`, the chat the cheat sheet works);
    multi-turn traffic goes back to single turns: to the traffic `before` had (the scenario the
    learner left with `m`) when that is single-turn, else to the step's own starting traffic
    (with one turn, should a scenario file have opened it as a chat). Only traffic changes:
    hardware, model and engine dials stay as the learner set them. ConfigError if the traffic
    cannot be reached (a traffic setting no dial can move)."""
    from sim.workload import MULTI_TURN_HELPDESK

    if current.workload.turns == 1:
        return _switch("the multi-turn helpdesk", True, current, MULTI_TURN_HELPDESK)
    if before is not None and before.workload.turns == 1:
        target = before.workload
    else:
        target = replace(step.scenario.workload, turns=1)
    return _switch("single-turn traffic", False, current, target)


def _switch(name: str, multi_turn: bool, current: Scenario, workload) -> WorkloadSwitch:
    from sim import dials

    goal = replace(current, workload=workload)
    paths = [f"workload.{path}" for path, _ in dials.paths_in(workload.to_dict())]
    pending = [(path, dials.get_value(goal, path)) for path in paths
               if dials.get_value(current, path) != dials.get_value(goal, path)]
    settings: dict = {}
    scenario = current
    # Settings depend on each other (a ramp-up's rates, a dataset's file): each pass sets what
    # is accepted after the settings before it, until all are set or a pass sets none.
    while pending:
        refused, error = [], None
        for path, value in pending:
            try:
                scenario = dials.set_value(scenario, path, value)
            except SimError as exc:
                refused.append((path, value))
                error = error or exc
                continue
            settings[path] = value
        if len(refused) == len(pending):
            raise error
        pending = refused
    return WorkloadSwitch(name, multi_turn, settings, scenario)


# ---------------------------------------------------------------------------------------------
# From a step's [activity] table to an object
# ---------------------------------------------------------------------------------------------

DRILLS = ("single_stream_ceiling", "in_flight", "cache_batch", "replicas")
CHALLENGES = ("static_peak", "past_knee", "long_prompt_stall", "cache_cap")
READINGS = ("percentiles",)
PREDICT_SHOW = tuple(_SHOW)
PREDICT_COMPUTE = ("", "batch_gain", "offline_gain")


def validate_spec(step) -> None:
    """Check a step's activity parameters; raises ValueError naming the problem."""
    spec = step.activity
    p = spec.params
    allowed: set[str]
    if spec.kind == "drill":
        allowed = {"drill", "tolerance", "rates", "outputs"}
        if p.get("drill") not in DRILLS:
            raise ValueError(f"drill = {p.get('drill')!r} must be one of {', '.join(DRILLS)}")
        if p["drill"] == "replicas" and (step.sweep is None or step.sweep.slo_ttft_p99_ms is None):
            raise ValueError("the replicas drill reads a rate curve with an SLO: add [sweep] rates and slo_ttft_p99_ms")
        tol = p.get("tolerance", 0.03)
        if not isinstance(tol, float) or not 0 < tol < 0.5:
            raise ValueError("tolerance must be a fraction such as 0.03")
    elif spec.kind == "break_it":
        allowed = {"challenge", "ttft_p99_goal_s", "min_queue", "gap_ratio_goal"}
        if p.get("challenge") not in CHALLENGES:
            raise ValueError(f"challenge = {p.get('challenge')!r} must be one of {', '.join(CHALLENGES)}")
    elif spec.kind == "predict":
        allowed = {"question", "choices", "answer", "explain", "show", "compute", "run", "watch_s", "batches",
                   "hides"}
        choices = p.get("choices")
        if not isinstance(p.get("question"), str) or not isinstance(p.get("explain"), str):
            raise ValueError("a predict needs question and explain strings")
        if not isinstance(choices, list) or not 2 <= len(choices) <= 9 or not all(isinstance(c, str) for c in choices):
            raise ValueError("choices must list 2 to 9 strings (picked with number keys)")
        answer = p.get("answer")
        if isinstance(answer, bool) or not isinstance(answer, int) or not 1 <= answer <= len(choices):
            raise ValueError("answer must be the number of the right choice, from 1")
        bad = [k for k in p.get("show", []) if k not in PREDICT_SHOW]
        if bad:
            raise ValueError(f"show: unknown figure {bad[0]!r}; known: {', '.join(PREDICT_SHOW)}")
        if p.get("compute", "") not in PREDICT_COMPUTE:
            raise ValueError(f"compute must be one of {', '.join(c for c in PREDICT_COMPUTE if c)}")
        batches = p.get("batches", [1, 64])
        if (not isinstance(batches, list) or len(batches) != 2 or not all(isinstance(b, int) and b > 0 for b in batches)
                or batches[0] >= batches[1]):
            raise ValueError("batches must be two batch sizes, the smaller first")
        hides = p.get("hides", [])
        if not isinstance(hides, list) or any(h not in ("batch", "req/s") for h in hides):
            raise ValueError('hides lists the curve plots that answer the question: "batch", "req/s"')
        watch = p.get("watch_s", 20.0)
        if isinstance(watch, bool) or not isinstance(watch, (int, float)) or not 1 <= watch <= 600:
            raise ValueError("watch_s must be 1 to 600 simulated seconds")
        run = p.get("run", {})
        if not isinstance(run, dict):
            raise ValueError("run must be a table of dial settings (dotted scenario paths)")
        dials = {d.name: d for d in step.dials}
        for path, value in run.items():
            if path not in dials:
                raise ValueError(f"run: {path!r} is not one of the step's dials")
            dials[path].check(value)
    elif spec.kind == "read":
        allowed = {"exercise"}
        if p.get("exercise") not in READINGS:
            raise ValueError(f"exercise must be one of {', '.join(READINGS)}")
    else:
        allowed = set()
    unknown = set(p) - allowed
    if unknown:
        raise ValueError(f"unknown parameter {sorted(unknown)[0]!r} for kind {spec.kind!r}")


def _sentence(text: str) -> str:
    """A choice as a sentence: "More replicas" -> "More replicas."."""
    text = text.rstrip()
    return text if text[-1:] in ".!?" else text + "."


def _dial_words(step, settings: dict) -> str:
    """Dial settings as the learner reads them on the dials: "Token budget 512 tokens"."""
    words = []
    for dial in step.dials:
        if dial.name in settings:
            value = settings[dial.name]
            shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"{value:g}" \
                if isinstance(value, float) else str(value)
            words.append(f"{dial.label} {shown}" + (f" {dial.unit}" if dial.unit else ""))
    return ", ".join(words)


def _worked_cache_example(step) -> tuple:
    """The cache batch a step's own text works out: its GPU, model, memory setting and lengths."""
    sc = step.scenario
    return (sc.gpu, sc.model, sc.gpu_memory_utilization, sc.workload.input.mean, sc.workload.output.mean)


def build(step) -> Any:
    """The activity object for a step: a Drill, BreakIt, Predict or PercentileReading; None for
    kinds the app renders itself (cheat_sheet, playground, none)."""
    spec = step.activity
    p = spec.params
    if spec.kind == "drill":
        tol = p.get("tolerance", 0.03)
        if p["drill"] == "single_stream_ceiling":
            learner = p.get("learner_gpu")  # set by the app for `batchtui --gpu`
            profiles = load_profiles(p.get("learner_profiles") or None) if learner else None
            return SingleStreamCeilingDrill(tol, profiles, learner_gpu=learner)
        if p["drill"] == "in_flight":
            return InFlightDrill(step.scenario, tuple(p.get("rates", InFlightDrill.RATES)),
                                 tuple(p.get("outputs", InFlightDrill.OUTPUTS)), tol)
        if p["drill"] == "replicas":
            return ReplicasDrill(step.scenario, step.sweep, tol)
        return CacheBatchDrill(tol, worked=_worked_cache_example(step))
    if spec.kind == "break_it":
        name = p["challenge"]
        if name == "static_peak":
            return StaticPeakChallenge(p.get("ttft_p99_goal_s", 10.0))
        if name == "past_knee":
            return PastKneeChallenge(p.get("ttft_p99_goal_s", 2.0), p.get("min_queue", 50))
        if name == "long_prompt_stall":
            return LongPromptStallChallenge(p.get("gap_ratio_goal", 20.0))
        w = step.scenario.workload
        return CacheCapChallenge(step.scenario.block_size, w.input.mean, w.output.mean)
    if spec.kind == "predict":
        return Predict(p["question"], tuple(p["choices"]), p["answer"], p["explain"],
                       tuple(p.get("show", ())), p.get("compute", ""), step.scenario, p.get("run"),
                       float(p.get("watch_s", 20.0)), step.compare.label if step.compare else "",
                       _dial_words(step, p.get("run", {})), tuple(p.get("batches", (1, 64))),
                       step.sweep.context if step.sweep else 640)
    if spec.kind == "read":
        return PercentileReading(step.scenario)
    return None
