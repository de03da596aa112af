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


# -- the tutorial screen composes; its widgets and helpers never hold it
TUTORIAL = "batchtui/screens/tutorial.py"
TUTORIAL_MOST_LINES = 350
"""The tutorial module's length at most: it composes, opens steps and owns the run."""


def holds_the_screen(source: str) -> list[str]:
    """`line: code` for each way a module's classes take or keep a screen: a constructor
    parameter named or annotated as one (`screen`, `tutorial`, `TutorialScreen`), or an attribute
    set from such a name or to `self.screen`/`self.app.screen`/`app.tutorial`."""
    import ast

    names = {"screen", "tutorial"}

    def screenish(node) -> bool:
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, ast.Attribute):
            return node.attr in names | {"tutorial"} or screenish(node.value) and node.attr in names
        return False

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__init__":
            for arg in node.args.args + node.args.kwonlyargs:
                annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                if arg.arg in names or "Screen" in annotation:
                    found.append((node.lineno, f"{node.lineno}: __init__({arg.arg})"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            kept = [t for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                    and t.value.id == "self"]
            if kept and node.value is not None and screenish(node.value):
                found.append((node.lineno, f"{node.lineno}: {ast.unparse(node)}"))
    return [text for _, text in sorted(found)]


def test_no_widget_or_helper_of_the_app_holds_the_screen():
    """Attributes down, messages up: a widget or helper is given what it works on (the step,
    the run, a callback) and posts or returns what happened; none takes the tutorial screen to
    reach into, and the tutorial module stays one that composes."""
    from pathlib import Path

    import batchtui

    root = Path(batchtui.__file__).parent
    found = []
    for folder in ("screens", "widgets"):
        for path in sorted((root / folder).rglob("*.py")):
            name = f"batchtui/{path.relative_to(root).as_posix()}"
            if name != TUTORIAL:
                found += [f"{name}:{line}" for line in holds_the_screen(path.read_text(encoding="utf-8"))]
    assert found == []
    lines = len((root.parent / TUTORIAL).read_text(encoding="utf-8").splitlines())
    assert lines <= TUTORIAL_MOST_LINES, f"{TUTORIAL}: {lines} lines"


def test_the_holding_check_finds_each_way():
    source = """
class Dials:
    def __init__(self, screen) -> None:
        self.screen = screen

class Panel:
    def __init__(self, owner: TutorialScreen, *, tutorial=None) -> None:
        self.owner = owner
        self.tutorial = tutorial
        self.parent_screen = self.app.screen
        self.tutorial_screen = app.tutorial

class Fine:
    def __init__(self, stack, say) -> None:
        self.stack = stack
        self.say = say
        self.focused = self.screen.focused
"""
    assert [line.split(":")[0] for line in holds_the_screen(source)] == ["3", "4", "7", "7", "9", "10", "11"]


async def test_the_live_tutorial_s_helpers_hold_no_screen(make_app):
    """On a running app: no object the screen holds (a helper, a pane) keeps the screen in an
    attribute of its own (callbacks it was given are the screen's methods, not the screen)."""
    from textual.widget import Widget

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        screen = app.screen
        held = {name: value for name, value in vars(screen).items()
                if type(value).__module__.startswith("batchtui.")}
        assert {"navigation", "before", "sweeps", "run", "playground", "live", "lesson", "sim_pane", "body", "bottom"} <= set(held)
        for name, value in held.items():
            own = {k: v for k, v in vars(value).items() if not (isinstance(value, Widget) and k.startswith("_"))}
            assert not any(v is screen for v in own.values()), name


async def test_every_key_s_action_has_a_part_that_runs_it(make_app):
    """`keys.HANDLERS` names the part of the screen that runs an action: each resolves to a method
    on the running screen, and every action the tutorial binds is one of them or the screen's own
    (or the app's)."""
    from textual.actions import parse

    from batchtui import keys

    app = make_app()
    async with app.run_test(size=(80, 24)):
        screen = app.screen
        for name, handler in keys.HANDLERS.items():
            path, method, _ = keys.parse_handler(handler)
            part = screen
            for attribute in path:
                part = getattr(part, attribute)
            assert callable(getattr(part, method, None)), (name, handler)
        for binding in type(screen).BINDINGS:
            namespace, name, _ = parse(binding.action)
            assert namespace == "app" or name in keys.HANDLERS or callable(getattr(screen, f"action_{name}", None)), name
