"""Step 20's playground: saving a scenario, and the multi-turn helpdesk switch (`m`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from sim.errors import SimError
from sim.scenario import Scenario

from .base import Kind


def save_scenario(scenario: Scenario, path: str | Path) -> str:
    """Write the scenario to a TOML file; returns a message for the learner."""
    try:
        scenario.save(path)
    except OSError as exc:
        return f"Could not save to {path}: {exc.strerror or exc}."
    return f"Saved the scenario to {path}."


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


KIND = Kind("playground", "", frozenset(), lambda step: None)  # the app runs the playground itself
