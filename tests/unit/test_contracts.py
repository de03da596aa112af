"""The never-rules of `contracts.toml`, checked on every import in the project's packages: the
layers (sim below steps below batchtui), the third-party packages sim and steps may use, the
named never-imports, no `from x import _name` across modules, and what `import sim, steps` loads."""

from __future__ import annotations

import ast
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


def imports_of(source: str, module: str, is_package: bool = False) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module imported, names taken from it) for every import in `source`,
    inside functions too; relative imports resolved against `module`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
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


@pytest.mark.parametrize("module", CONTRACTS["light"]["modules"])
def test_the_light_modules_load_no_interface_library(module):
    banned = CONTRACTS["light"]["never_loads"]
    code = (f"import sys, {module}\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({banned!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", f"import {module} loads {out.stdout.strip()}"
