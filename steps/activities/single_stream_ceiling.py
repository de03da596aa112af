"""Step 2's drill: the single-stream ceiling of a GPU and model."""

from __future__ import annotations

from sim.profiles import BUILTIN_PROFILES, ProfileSet, load_profiles

from ..figures import fmt, gigabytes
from .base import (DRILL_TOLERANCE, GIB, Drill, Kind, Question, Slip, article, fits, ratio_slips,
                   seeded_rng)


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
        rng = seeded_rng(seed)
        yours = self.learner_gpu is not None and seed % 2 == 0
        models = self.MODELS
        if yours:  # the models that fit the learner's GPU alone, less the lesson's own example
            models = tuple(m for m in self.MODELS if fits(self.profiles, self.learner_gpu, m)
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
        where = (f"**your GPU**, {article(gpu.name)} {gpu.name}" if yours
                 else f"{article(gpu.name)} **{gpu.name}**")
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
            f"Weights = {fmt(model.params / 1e9)} B × {fmt(model.bytes_per_param)} bytes = {gigabytes(weights)} GB. "
            f"Divide {fmt(gpu.hbm_bandwidth / 1e9, 4)} GB/s by it.",
        )
        lines = [
            f"- weights = {fmt(model.params / 1e9)} B parameters × {fmt(model.bytes_per_param)} bytes (bf16) = "
            f"**{gigabytes(weights)} GB**",
            f"- ceiling = {fmt(bw_tb, 4)} TB/s ÷ {gigabytes(weights)} GB = "
            f"{fmt(gpu.hbm_bandwidth / 1e9, 4)} GB/s ÷ {gigabytes(weights)} GB ≈ "
            f"**{fmt(ceiling)} tokens/s**",
        ]
        if realistic:
            lines.append(f"- at {pct}% of the bandwidth: {share:g} × {fmt(ceiling)} ≈ **{fmt(answer)} tokens/s**")
        else:
            lines.append(f"- a real server reaches about {pct}% of that: ≈ {fmt(ceiling * share)} tokens/s")
        # The time a token takes on a real server: the TPOT the run beside shows (it runs this
        # question's GPU and model once answered), not the ceiling's, which no run reaches.
        real = ceiling * share
        lines.append(f"- one token every 1000 ÷ {fmt(real)} ≈ {fmt(1000 / real)} ms: about the TPOT beside")
        gib = (f"GB and GiB got mixed: {gigabytes(weights)} GB is {fmt(weights / GIB)} GiB, and "
               "TB/s is decimal too. Keep both in decimal units.")
        pairs = [
            (GIB / 1e9, gib),
            (1e12 / 2**40, gib),
            (2.0, "Twice too high: bf16 takes 2 bytes per parameter, so the weights are "
                  f"{gigabytes(weights)} GB, not {fmt(model.params / 1e9)} GB."),
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
        slips = list(ratio_slips(answer, pairs))
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


def _build(step) -> SingleStreamCeilingDrill:
    p = step.activity.params
    learner = p.get("learner_gpu")  # set by the app for `batchtui --gpu`
    profiles = load_profiles(p.get("learner_profiles") or None) if learner else None
    return SingleStreamCeilingDrill(p.get("tolerance", DRILL_TOLERANCE), profiles, learner_gpu=learner)


KIND = Kind("drill", "single_stream_ceiling", frozenset({"tolerance", "rates", "outputs"}), _build)
