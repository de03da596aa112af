"""The learner's own GPU in the tutorial (`batchtui --gpu auto`, or `--gpu NAME`).

`find(settings)` resolves it: for `auto` it asks nvidia-smi (`sim.detect`, up to a few seconds,
so the app calls it from a worker after its first frame); for a name it looks the profile up.
`on_learner_gpu(step, gpu)` is a step as it opens on that GPU: the cheat sheet (step 19) and the
playground (step 20) run their scenarios on it (the playground not when `--scenario FILE` gave
it one); the other lessons keep the H100 their text works through.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .cli.flag_table import GPU

FOLLOWS_THE_LEARNER = ("cheat_sheet", "playground")
"""Activity kinds whose scenario starts on the learner's GPU."""
DRILL_ON_THE_LEARNER = "single_stream_ceiling"
"""The drill that offers a question on the learner's GPU (step 2)."""


@dataclass(frozen=True)
class LearnerGpu:
    profile_id: str
    """The GPU profile the learner's steps run (the lesson's H100 when nothing was found)."""
    label: str
    """A few words for the header."""
    notice: str
    """One line said when it is known (what was found, or why the lesson's GPU runs)."""
    found: bool
    """False when the lesson's GPU stands in (no nvidia-smi, no GPU, an unknown one)."""
    profiles_path: str = ""


def find(gpu: str, profiles_path: str = "") -> LearnerGpu:
    """Resolve `--gpu` (blocking: for `auto` this runs nvidia-smi)."""
    from sim.detect import detect, match_profile
    from sim.profiles import load_profiles

    profiles = load_profiles(profiles_path or None)
    if gpu.strip().lower() == "auto":
        detection = detect(profiles)
        label = detection.short()
        return LearnerGpu(detection.profile_id, label, f"{GPU.flag} auto: {detection.notice()}", detection.found,
                          profiles_path)
    gpu_id = gpu if gpu in profiles.gpus else match_profile(gpu, profiles)
    profile = profiles.gpu(gpu_id or gpu)  # ProfileError naming the known GPUs
    return LearnerGpu(profile.id, profile.name, "", True, profiles_path)


def _follows(activity: dict) -> bool:
    kind = activity.get("kind")
    return kind in FOLLOWS_THE_LEARNER or (kind == "drill" and activity.get("drill") == DRILL_ON_THE_LEARNER)


def on_learner_gpu(step, gpu: LearnerGpu | None, *, scenario_given: bool = False):
    """`step` as it opens for a learner on `gpu`: the cheat sheet and playground on it, the
    single-stream drill offering it (its question on the learner's GPU comes first). A step that
    cannot run there keeps the lesson's GPU, the learner's offered first on its GPU dial (turned
    to, the dial says why)."""
    return _placed(step, gpu, scenario_given)[0]


def _placed(step, gpu: LearnerGpu | None, scenario_given: bool) -> tuple:
    """`on_learner_gpu`'s step, and why it keeps the lesson's GPU (None: it does not): its model
    does not fit the learner's, or its max_model_len is more than the KV cache holds there (Llama
    3.1 8B's 131,072 tokens on a 24 GB L4)."""
    if gpu is None or not _follows({"kind": step.activity.kind, **step.activity.params}):
        return step, None
    if step.activity.kind == "drill":
        params = {**step.activity.params, "learner_gpu": gpu.profile_id, "learner_profiles": gpu.profiles_path}
        return replace(step, activity=replace(step.activity, params=params)), None
    if step.activity.kind == "playground" and scenario_given:
        return step, None
    from sim.search import cannot_run

    from .formatting import in_app_words

    scenario = replace(step.scenario, gpu=gpu.profile_id,
                       profiles_path=gpu.profiles_path or step.scenario.profiles_path)
    # The GPU dial offers the learner's GPU first, beside the lesson's others.
    dials = tuple(replace(d, choices=(gpu.profile_id, *(c for c in d.choices if c != gpu.profile_id)))
                  if d.name == "gpu" and d.choices else d for d in step.dials)
    why = cannot_run(scenario, scenario.profiles(), in_app_words)  # (as the playground's model picker asks)
    if why is not None:  # the lesson's GPU runs it; the dial says why on the learner's
        return replace(step, scenario=replace(step.scenario, profiles_path=scenario.profiles_path), dials=dials), why
    return replace(step, scenario=scenario, dials=dials), None


def learner_steps(steps, gpu: LearnerGpu, *, scenario_given: bool = False) -> tuple[dict, str]:
    """{index: step} for the steps that change on the learner's GPU, and a line naming those
    that keep the lesson's GPU because they cannot run on the learner's, and why ("" if none).
    With `steps.Lessons`, only those steps are built (their front matter says which); a plain
    list is looked through."""
    from steps import read_lesson

    summaries = getattr(steps, "summaries", None)
    out, kept = {}, []
    for index in range(len(steps)):
        if summaries is not None and getattr(summaries[index], "path", None) is not None:
            activity = read_lesson(summaries[index].path)[0].get("activity", {})
            if not isinstance(activity, dict) or not _follows(activity):
                continue
        step = steps[index]
        changed, why = _placed(step, gpu, scenario_given)
        if changed is not step:
            out[index] = changed
            if why is not None:
                kept.append(f"step {step.number} keeps the lesson's {step.scenario.gpu} ({why.rstrip('.')})")
    return out, (f"On your {gpu.label}, " + "; ".join(kept) + ".") if kept else ""
