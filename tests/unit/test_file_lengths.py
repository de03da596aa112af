"""No module of the project's code is over 600 lines unless `contracts.toml`'s `[lengths.longer]`
declares it, with the most lines it may have and why it is one job: a long file is a sign that a
second job moved in. A declared file that shrank under the limit is no longer declared."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LENGTHS = tomllib.loads((ROOT / "contracts.toml").read_text(encoding="utf-8"))["lengths"]


def too_long(root: Path, lengths: dict) -> list[str]:
    """One line for each module over the limit and not declared (or over its declared most), and
    for each declaration without a why or of a file no longer over the limit."""
    limit, declared = lengths["limit"], lengths.get("longer", {})
    out = []
    seen = set()
    for package in lengths["packages"]:
        for path in sorted((root / package).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            name = path.relative_to(root).as_posix()
            seen.add(name)
            if name in declared:
                most = declared[name]["at_most"]
                if lines > most:
                    out.append(f"{name}: {lines} lines, over the {most} declared")
                elif lines <= limit:
                    out.append(f"{name}: {lines} lines, no longer over {limit}: drop its declaration")
            elif lines > limit:
                out.append(f"{name}: {lines} lines")
    for name, entry in declared.items():
        if name not in seen:
            out.append(f"{name}: declared, but no such module")
        elif not str(entry.get("why", "")).strip():
            out.append(f"{name}: declared without a why")
    return out


def test_no_module_is_over_600_lines_unless_declared_with_a_why():
    assert LENGTHS["limit"] == 600
    assert {"sim", "steps", "batchtui"} <= set(LENGTHS["packages"])
    long = too_long(ROOT, LENGTHS)
    assert not long, "split these, or declare why in contracts.toml's [lengths.longer]:\n" + "\n".join(long)


def test_the_check_finds_a_long_file(tmp_path):
    for package in ("sim", "steps", "batchtui"):
        (tmp_path / package).mkdir()
    (tmp_path / "sim" / "long.py").write_text("x = 1\n" * 601, encoding="utf-8")
    (tmp_path / "steps" / "long.py").write_text("x = 1\n" * 601, encoding="utf-8")
    (tmp_path / "batchtui" / "short.py").write_text("x = 1\n" * 600, encoding="utf-8")
    lengths = {"limit": 600, "packages": ["sim", "steps", "batchtui"]}
    assert too_long(tmp_path, lengths) == ["sim/long.py: 601 lines", "steps/long.py: 601 lines"]
    lengths["longer"] = {"sim/long.py": {"at_most": 650, "why": "a table"},
                         "steps/long.py": {"at_most": 600, "why": "a table"}}
    assert too_long(tmp_path, lengths) == ["steps/long.py: 601 lines, over the 600 declared"]
    lengths["longer"] = {"sim/long.py": {"at_most": 650, "why": " "},
                         "batchtui/short.py": {"at_most": 650, "why": "grew once"},
                         "batchtui/gone.py": {"at_most": 650, "why": "moved"}}
    assert too_long(tmp_path, lengths) == [
        "steps/long.py: 601 lines",
        "batchtui/short.py: 600 lines, no longer over 600: drop its declaration",
        "sim/long.py: declared without a why",
        "batchtui/gone.py: declared, but no such module",
    ]
