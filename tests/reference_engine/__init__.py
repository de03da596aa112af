"""The simulator as it was before issue 10 (commit 382dd67): `ContinuousScheduler` plus the engine
loop, and the bulk path of `fastpath.py` beside it. Kept as a reference implementation: the
tests run the new engine against it on random workloads and the speed benchmark times both.
Frozen: do not change it to follow the new code (only imports were adjusted so that it stands
alone; it shares the scenario, profile, workload, config and error types with `sim`)."""

from .engine import Engine, run_scenario

__all__ = ["Engine", "run_scenario"]
