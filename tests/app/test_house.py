"""The house rules of the app package: every activity kind has one home. (Which module may import
which is `contracts.toml`, checked by tests/unit/test_contracts.py.)"""

from __future__ import annotations

def test_every_activity_kind_has_one_view():
    from steps import ACTIVITY_KINDS

    from batchtui.activity_kinds import ACTIVITY_VIEWS

    assert set(ACTIVITY_VIEWS) == set(ACTIVITY_KINDS) - {"none"}


def test_no_screen_reaches_into_the_engine():
    """A screen asks `LiveSimulation` (its scenario, a snapshot, whether it started or is done);
    it never reaches through it into the engine (`self.sim.engine...`)."""
    import ast
    from pathlib import Path

    import batchtui

    found = []
    for path in sorted((Path(batchtui.__file__).parent / "screens").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("engine", "compare_engine", "driver"):
                owner = node.value
                if (isinstance(owner, ast.Attribute) and owner.attr == "sim") or \
                        (isinstance(owner, ast.Name) and owner.id == "sim"):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
