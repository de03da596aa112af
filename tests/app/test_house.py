"""The house rules of the app package: every activity kind has one home, and the app reaches the
engine only through its `LiveSimulation`. (Which module may import which is `contracts.toml`,
checked by tests/unit/test_contracts.py.)"""

from __future__ import annotations

def test_every_activity_kind_has_one_view():
    from steps import ACTIVITY_KINDS

    from batchtui.activity_kinds import ACTIVITY_VIEWS

    assert set(ACTIVITY_VIEWS) == set(ACTIVITY_KINDS) - {"none"}


# The app's modules that hold no `LiveSimulation`: the command line and the served twin run
# engines of their own (contracts.toml keeps the command line from the app's screens).
OWN_ENGINES = ("batchtui/cli/", "batchtui/serve/")
BUILDS_AN_ENGINE = {
    "batchtui/scenario_files.py": "builds an engine once to see whether a scenario file runs, never a run shown",
}
ACCESSORS = {"getattr", "setattr", "hasattr", "delattr", "attrgetter"}


def reached_through(owner) -> tuple[set[str], set[str]]:
    """The attributes in which `owner` (a LiveSimulation) holds an engine or its driver, and the
    modules that define those: what the rest of the app must not reach."""
    from sim.driver import Driver
    from sim.engine import Engine

    held = {name: value for name, value in vars(owner).items() if isinstance(value, (Engine, Driver))}
    return set(held), {type(value).__module__ for value in held.values()}


def reaches(source: str, attributes: set[str], modules: set[str]) -> list[str]:
    """`line: code` for every way `source` reaches one of `attributes` of anything (whatever the
    owner is called: `self.sim.engine`, `screen.sim.engine`, an alias, `getattr(sim, "engine")`,
    `attrgetter("driver.paused")`, `vars(sim)["engine"]`) or imports one of `modules`."""
    import ast

    def named(text: object) -> bool:
        return isinstance(text, str) and bool(set(text.split(".")) & attributes)

    found = []
    for node in ast.walk(ast.parse(source)):
        hit = False
        if isinstance(node, ast.Attribute):
            owner = node.value  # a scenario's `engine` is its engine settings, not an engine
            of_scenario = (isinstance(owner, ast.Name) and owner.id == "scenario") or \
                (isinstance(owner, ast.Attribute) and owner.attr == "scenario")
            hit = node.attr in attributes and not of_scenario
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            hit = name in ACCESSORS and any(isinstance(a, ast.Constant) and named(a.value) for a in node.args)
        elif isinstance(node, ast.Subscript):  # vars(x)["engine"], x.__dict__["engine"]
            table = node.value
            by_name = (isinstance(table, ast.Call) and isinstance(table.func, ast.Name) and table.func.id == "vars") \
                or (isinstance(table, ast.Attribute) and table.attr == "__dict__")
            hit = by_name and isinstance(node.slice, ast.Constant) and named(node.slice.value)
        elif isinstance(node, ast.ImportFrom):
            hit = node.module in modules or any(f"{node.module}.{a.name}" in modules for a in node.names)
        elif isinstance(node, ast.Import):
            hit = any(a.name in modules for a in node.names)
        if hit:
            found.append((node.lineno, f"{node.lineno}: {ast.unparse(node)}"))
    return [text for _, text in sorted(found)]


def test_nothing_in_the_app_reaches_into_the_engine():
    """The app asks its `LiveSimulation` (the scenario, a snapshot, whether it started or is done,
    its controls); no screen, widget or helper reaches through it into the engine, the comparison
    engine or the driver, however the simulation is named or the attribute spelled, nor builds
    an engine or a driver of its own."""
    from pathlib import Path

    import batchtui
    from batchtui.simulation import LiveSimulation
    from sim.scenario import Scenario
    from sim.workload import WorkloadSpec

    scenario = Scenario(workload=WorkloadSpec(num_prompts=2))
    attributes, modules = reached_through(LiveSimulation(scenario, post=lambda frame: None, compare=scenario))
    assert {"engine", "compare_engine", "driver"} <= attributes and modules == {"sim.engine", "sim.driver"}
    root = Path(batchtui.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        name = "batchtui/" + path.relative_to(root).as_posix()
        if name == "batchtui/simulation.py" or name.startswith(OWN_ENGINES):
            continue
        imports_allowed = modules if name in BUILDS_AN_ENGINE else set()
        found += [f"{name}:{line}" for line in reaches(path.read_text(encoding="utf-8"), attributes,
                                                        modules - imports_allowed)]
    assert found == []


def test_the_reach_check_finds_every_spelling():
    attributes, modules = {"engine", "compare_engine", "driver"}, {"sim.engine", "sim.driver"}
    source = """
import operator
import sim.engine
from sim import driver
from sim.engine import Engine

class Screen:
    def on_key(self, screen):
        run = self.app.sim
        run.engine.step()
        screen.sim.compare_engine.reset()
        getattr(self.simulation, "driver").pause()
        operator.attrgetter("driver.paused")(run)
        vars(run)["engine"]
        run.__dict__["driver"]
        self.sim.scenario.to_dict()["engine"]
        self.sim.set_dial("seed", 1)
        self.run_worker(run.run, name="driver")
"""
    found = reaches(source, attributes, modules)
    assert [line.split(":")[0] for line in found] == ["3", "4", "5", "10", "11", "12", "13", "14", "15"], found
    assert reaches("self.sim.set_dial('engine.max_num_seqs', 3)\nself.sim.scenario.engine\nscenario.engine\n",
                   attributes, set()) == []  # a dial's path, a scenario's engine settings
