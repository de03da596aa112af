"""Every number a lesson states comes from one of two places, both in this package.

- A **template**, `{{name}}` in the lesson text, a hint or an activity's wording, is filled when
  the step loads: `FIGURES[name]` computes it from the step's own scenario with the simulator
  (profiles, the cost model, a request run alone, the saturated rate, one rate measured at its
  steady state: a step builds in at most about 0.15 s, `benchmarks/lesson_benchmark.py`).
- A **pinned figure** is written in the lesson as is ("about 270 ms"): `PINNED` lists it with the
  measure a test (`tests/unit/test_figures.py`) runs headless on that step's scenario and the
  tolerance it must hold to. Use it for what takes seconds to measure (several long runs).

That test fails for any other number in a lesson file, except the names in `NOT_FIGURES`
(Llama 3.1 8B, p99, step 9...). So a lesson cannot state a figure the simulator contradicts.

Templates take the figure's own rounding: the same quantity reads the same on every step.

`base` holds what figures are made of (the `Lab`, the registries, template filling, numbers in
prose); `alone`, `batching`, `prefill_and_cache` and `choosing` register the figures of each
group of lessons, by the step that first states them. Importing this package registers them all.
"""

from __future__ import annotations

# Each group registers its figures when imported, in lesson order.
from . import alone, batching, prefill_and_cache, choosing  # noqa: F401, I001
from .base import (CHOICES, FIGURES, MEASURE_SEED, NOT_FIGURES, NUMBER, PENDING, PINNED, QUICK_SATURATION_PROMPTS,
                   SATURATION_PROMPTS, STEADY_WINDOW, TEMPLATE, Choices, Figure, FigureError, Lab, Pinned, choices,
                   figure, fill, fmt, kilo, ms, names_in, pending, pinned, sig, stray_numbers, whole, wording)
from .alone import gigabytes
from .batching import in_flight
from .choosing import CHEAT_PEAK, HELPDESK_CONVERSATIONS, helpdesk_run

__all__ = [
    "CHEAT_PEAK", "CHOICES", "FIGURES", "HELPDESK_CONVERSATIONS", "MEASURE_SEED", "NOT_FIGURES", "NUMBER", "PENDING",
    "PINNED", "QUICK_SATURATION_PROMPTS", "SATURATION_PROMPTS", "STEADY_WINDOW", "TEMPLATE", "Choices", "Figure",
    "FigureError", "Lab", "Pinned", "choices", "figure", "fill", "fmt", "gigabytes", "helpdesk_run", "in_flight", "kilo", "ms",
    "names_in", "pending", "pinned", "sig", "stray_numbers", "whole", "wording",
]
