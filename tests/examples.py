"""How many examples a property test draws: one rule for every @given test of the suite.

A test states its count for the default run, `examples(n)`; the Hypothesis profile in force
(tests/conftest.py, `HYPOTHESIS_PROFILE`) scales it:

- `ci`, the default: `n` examples, derandomized (the same on every run and machine, so a failure
  in CI is a failure everywhere);
- `thorough`: four times as many, still derandomized. The thorough step of `.ci/run`
  (`BATCHTUI_THOROUGH=1`) runs every property test with it, beside the `thorough` variants;
- `dev`: ten times as many, fresh random ones each run, for a developer's own soak.

The costliest properties (the engine's paths against each other, the state files, the numeric
flags) state about half the count they ran in CI before the thorough step existed: their
thorough run draws twice the old count.
"""

from __future__ import annotations

from hypothesis import settings

DEFAULT_RUN = 100
"""The `ci` profile's max_examples (the profiles are registered from it, tests/conftest.py):
`examples(n)` is n under it."""


def examples(count: int) -> int:
    """`count` examples in the default run, scaled by the profile in force (at least 5)."""
    return max(5, count * settings.default.max_examples // DEFAULT_RUN)
