"""The house rules of the app package: views draw what they are given (no lessons imported),
and every activity kind has one home."""

from __future__ import annotations

import ast
from pathlib import Path

import batchtui

WIDGETS = Path(batchtui.__file__).parent / "widgets"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_widgets_never_import_the_lessons():
    offenders = {str(path.relative_to(WIDGETS)): sorted(m for m in imported_modules(path)
                                                          if m == "steps" or m.startswith("steps."))
                 for path in WIDGETS.rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_every_activity_kind_has_one_view():
    from steps import ACTIVITY_KINDS

    from batchtui.activity_kinds import ACTIVITY_VIEWS

    assert set(ACTIVITY_VIEWS) == set(ACTIVITY_KINDS) - {"none"}
