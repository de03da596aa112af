"""The never-rules of `contracts.toml`, checked on every import in the project's packages: the
layers (sim below steps below batchtui), the third-party packages sim and steps may use, the
named never-imports, no `from x import _name` across modules, no import loop at any depth, and
what `import sim, steps` loads."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = tomllib.loads((ROOT / "contracts.toml").read_text(encoding="utf-8"))
LAYERS: list[str] = CONTRACTS["layers"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def scanned(source: str) -> tuple[list[tuple[ast.AST, bool]], list[ast.Call]]:
    """One walk of a module's syntax tree, shared by the checks below: its import statements,
    each with whether it sits under `if TYPE_CHECKING:` (for annotations only: it never runs),
    and its calls of `import_module` or `__import__`."""
    imports, dynamic, annotations_only = [], [], set()
    for node in ast.walk(ast.parse(source)):  # breadth first: an `if` comes before its body
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            annotations_only |= {id(inner) for part in node.body for inner in ast.walk(part)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append((node, id(node) in annotations_only))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in ("import_module", "__import__"):
                dynamic.append(node)
    return imports, dynamic


def imports_of(source: str, module: str, is_package: bool = False,
               with_typing: bool = True) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module imported, names taken from it) for every import in `source`,
    inside functions too; relative imports resolved against `module`. Without `with_typing`,
    the imports under `if TYPE_CHECKING:` (which never run) are left out."""
    found = []
    for node, for_typing in scanned(source)[0]:
        if for_typing and not with_typing:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        else:
            if node.level:
                base = module.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "__future__":
                continue
            found.append((node.lineno, target, [alias.name for alias in node.names]))
    return found


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def broken_rules(source: str, module: str, is_package: bool = False) -> list[str]:
    """What the imports in `source` (the module `module`) break, one line each."""
    package = module.split(".")[0]
    own_layer = LAYERS.index(package)
    allowed_third = CONTRACTS["third_party"].get(package)
    out = []
    for line, target, names in imports_of(source, module, is_package):
        top = target.split(".")[0]
        where = f"{module}:{line}: {target}"
        if top in LAYERS and LAYERS.index(top) > own_layer:
            out.append(f"{where}: {package} is below {top} (layers {' < '.join(LAYERS)})")
        if (allowed_third is not None and top not in LAYERS and top not in sys.stdlib_module_names
                and top not in allowed_third):
            out.append(f"{where}: {package} may use only the standard library and {allowed_third}")
        for rule in CONTRACTS["never"]:
            if under(module, rule["from"]) and any(under(target, banned) for banned in rule["imports"]):
                out.append(f"{where}: {rule['from']} never imports {target} ({rule['why']})")
        if not CONTRACTS["private"]["from_imports"]:
            for name in names:
                if name.startswith("_") and not name.startswith("__"):
                    out.append(f"{where}: `from {target} import {name}` takes another module's private name")
    return out


def test_every_import_keeps_the_contracts():
    found = []
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            found += broken_rules(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")
    assert found == []


def test_the_walk_finds_each_kind_of_break():
    source = ("import numpy\nimport textual\nfrom batchtui import app\n"
              "def f():\n    from steps.figures import _private, fmt\n    from ..cli import x\n")
    found = broken_rules(source, "sim.engine")
    assert len(found) == 5, found
    assert any("may use only the standard library" in f for f in found)
    assert any("sim is below batchtui" in f for f in found)
    assert any("sim is below steps" in f and ":5:" in f for f in found)  # inside a function too
    assert any("import _private" in f for f in found)
    widget = broken_rules("from steps import Step\nfrom .metrics import _x\n", "batchtui.widgets.curve")
    assert any("never imports steps" in f for f in widget)
    assert any("from batchtui.widgets.metrics import _x" in f for f in widget)
    assert broken_rules("from . import dials\nfrom .errors import SimError\n", "sim", is_package=True) == []


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """For each module (name -> its source and whether it is a package's `__init__`), the
    modules among them it imports when it runs: at the top or inside a function, an import under
    `if TYPE_CHECKING:` left out. `from a import b` is an import of the module `a.b` where there is
    one, else of `a`; `import a.b` of `a.b`. Importing `a.b` runs `a`'s `__init__` first, but that
    edge is not drawn: Python sets a package up before its modules run, so an `__init__` that
    imports its own modules makes no loop."""
    graph: dict[str, set[str]] = {}
    for module, (source, is_package) in sources.items():
        edges = set()
        for _line, target, names in imports_of(source, module, is_package, with_typing=False):
            submodules = {f"{target}.{name}" for name in names} & sources.keys()
            edges |= submodules
            if len(submodules) < len(names) or not names:  # a name that is no module, or `import a.b`
                parts = target.split(".")
                while parts and ".".join(parts) not in sources:
                    parts.pop()
                if parts:
                    edges.add(".".join(parts))
        graph[module] = edges
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other, through any number of others (Tarjan's
    strongly connected components of more than one module, and a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in graph[node]:
                    loops.append(sorted(group))
    return loops


def project_sources(packages) -> dict[str, tuple[str, bool]]:
    return {module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
            for package in packages for path in sorted((ROOT / package).rglob("*.py"))}


def test_no_module_imports_itself_through_others():
    loops = import_loops(import_graph(project_sources(CONTRACTS["loops"]["packages"])))
    assert loops == [], "import loops (move what the modules share into a module of its own):\n" + "\n".join(
        " <-> ".join(group) for group in loops)


def test_the_loop_check_finds_loops_at_any_depth():
    sources = {
        "sim": ("from . import a\n", True),
        "sim.a": ("from .b import x\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import T\n", False),
        "sim.b": ("import sim.c\n", False),
        "sim.c": ("def f():\n    from sim import a\n", False),  # a -> b -> c -> a, inside a function
        "sim.d": ("from .a import y\n", False),  # a -> d only for annotations: no loop
        "sim.e": ("from . import e\nimport numpy\n", False),  # itself
        "steps": ("from .f import g\n", True),
        "steps.f": ("from steps import VALUE\n", False),  # a name the package's __init__ holds: a loop
        "steps.h": ("from steps import f\n", False),  # a module of the package: not its __init__
    }
    graph = import_graph(sources)
    assert graph["sim.d"] == {"sim.a"} and graph["sim.a"] == {"sim.b"} and graph["sim.c"] == {"sim.a"}
    assert graph["steps.f"] == {"steps"} and graph["steps.h"] == {"steps.f"}
    assert import_loops(graph) == [["sim.a", "sim.b", "sim.c"], ["sim.e"], ["steps", "steps.f"]]
    sources |= {"sim.c": ("def f():\n    import numpy\n", False), "sim.e": ("import numpy\n", False),
                "steps.f": ("VALUE = 1\n", False)}
    assert import_loops(import_graph(sources)) == []


def dynamic_imports(source: str) -> list[str]:
    """`line: call` for every import no import statement names (`importlib.import_module`,
    `__import__`): the walk above cannot see what they load."""
    return [f"{node.lineno}: {ast.unparse(node)}" for node in scanned(source)[1]]


def test_sim_and_steps_load_only_what_their_imports_name():
    """sim and steps import no module by a name computed at run time, so the walk's checks (the
    layers, their third-party packages: never textual or rich) hold for everything they can load,
    at import or when a function runs (`steps.load_steps()` building the twenty lessons too)."""
    found = [f"{module_name(path)}:{line}" for package in CONTRACTS["third_party"]
             for path in sorted((ROOT / package).rglob("*.py")) for line in dynamic_imports(path.read_text("utf-8"))]
    assert found == []
    assert dynamic_imports("import importlib\ndef f(name):\n    importlib.import_module(name)\n    __import__('rich')\n") \
        == ["3: importlib.import_module(name)", "4: __import__('rich')"]


@pytest.mark.parametrize("module", CONTRACTS["light"]["modules"])
def test_the_light_modules_load_no_interface_library(module):
    banned = CONTRACTS["light"]["never_loads"]
    code = (f"import sys, {module}\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({banned!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", f"import {module} loads {out.stdout.strip()}"
