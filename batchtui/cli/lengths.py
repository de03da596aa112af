"""The lengths a plan assumed: what `batchtui plan` and `batchtui search` state of the traffic they
planned for (an answer holds for those lengths only)."""

from __future__ import annotations

from .options import flagged


def planned_lengths(scenario, n: int) -> dict:
    """The prompt and answer lengths of the traffic a plan ran, as its runs draw them (the first
    `n` requests on the scenario's seed; a conversation's first turns): for each, how the traffic
    is described (`dist`) and the drawn lengths' mean, p50, p99, shortest and longest."""
    from dataclasses import replace

    import numpy as np

    from sim.workload import generate, trace_requests

    w = scenario.workload
    if w.arrival == "trace":
        specs, source = trace_requests(w)[:n], f"the trace {w.trace_path}"
    else:
        specs = generate(replace(w, num_prompts=n), np.random.default_rng(scenario.seed))
        source = f"the {w.dataset} dataset {w.dataset_path}" if w.dataset != "random" else ""
    out = {}
    for side, spec, lengths in (("input", w.input, [s.prompt_len for s in specs]),
                                ("output", w.output, [s.output_len for s in specs])):
        a = np.asarray(lengths, dtype=float)
        out[side] = {"dist": source or spec.dist, "mean": float(a.mean()), "p50": float(np.percentile(a, 50)),
                     "p99": float(np.percentile(a, 99)), "min": int(a.min()), "max": int(a.max())}
        if not source and spec.dist == "lognormal":
            out[side]["sigma"] = spec.sigma
    return out


def lengths_text(lengths: dict) -> str:
    """What a plan assumed of its traffic's lengths (`planned_lengths`), in a sentence or two."""
    def one(name: str, d: dict) -> str:
        if d["min"] == d["max"]:
            return f"{name} of {d['min']:,} tokens each"
        how = d["dist"] + (f", sigma {d['sigma']:g}" if "sigma" in d else "")
        return (f"{name} {how}: mean {d['mean']:,.0f}, p50 {d['p50']:,.0f}, p99 {d['p99']:,.0f} tokens "
                f"({d['min']:,}-{d['max']:,})")

    text = f"Planned for {one('prompts', lengths['input'])} and {one('answers', lengths['output'])}"
    if lengths["input"]["min"] == lengths["input"]["max"] and lengths["output"]["min"] == lengths["output"]["max"]:
        return (text + ": every request alike. The answer holds for these lengths only: if yours vary, "
                + flagged("plan for them ({workload.input.dist}/{workload.output.dist}, {workload.dataset} or "
                          "{workload.trace_path})."))
    return text + ", as its runs drew them."
