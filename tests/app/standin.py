"""A small stand-in lesson list for app tests: real `steps.Step` records with short text and
scenarios that run fast, so the tests do not depend on the wording of the twenty lessons."""

from __future__ import annotations

from sim.scenario import Scenario
from sim.workload import WorkloadSpec
from steps import ActivitySpec, Dial, Step, SweepSpec

ALL_VIEWS = ("seats", "kv", "iteration", "gauges", "metrics", "sparklines", "curve")


def _scenario(**engine) -> Scenario:
    engine = {"max_num_seqs": 64, **engine}
    return Scenario(engine=engine, workload=WorkloadSpec.from_dict({"request_rate": 20.0}), seed=7)


def make_steps(count: int = 4) -> list[Step]:
    rate = Dial(name="workload.request_rate", label="Request rate", unit="req/s", min=1, max=60, step=1)
    seats = Dial(name="engine.max_num_seqs", label="max_num_seqs", unit="seats", min=1, max=256, step=1)
    steps = []
    for n in range(1, count + 1):
        views = ALL_VIEWS if n == count else (("seats", "metrics") if n % 2 else ("seats", "iteration", "kv"))
        steps.append(Step(
            number=n, slug=f"standin-{n}", title=f"Stand-in step {n}", section="Section A" if n < 3 else "Section B",
            minutes=2, views=views, scenario=_scenario(), dials=(rate, seats) if n != 2 else (),
            hints=("First hint.", "Second hint.") if n == 1 else (),
            activity=ActivitySpec("none"),
            body_md=f"# Step {n}\n\nSome lesson text for step {n}.\n\n- a point\n- another point\n",
            sweep=SweepSpec(batch_sizes=(1, 4, 16, 64, 256)) if "curve" in views else None,
        ))
    return steps
