"""No module under batchtui/ or steps/ is over 600 lines unless the README's layout section names
it and says why (issue 23): a long file is a sign that a second job moved in."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 600
PACKAGES = ("batchtui", "steps")


def explained(readme: str) -> set[str]:
    """The paths the README's "kept under 600 lines" list names, each with its why."""
    section = readme.split("kept under 600 lines", 1)
    if len(section) < 2:
        return set()
    listed = re.findall(r"^- `([^`]+\.py)` \(about [\d,]+ lines\): \S", section[1].split("\n## ", 1)[0], re.M)
    return set(listed)


def too_long(root: Path, readme: str) -> list[str]:
    allowed = explained(readme)
    out = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            name = path.relative_to(root).as_posix()
            if lines > LIMIT and name not in allowed:
                out.append(f"{name}: {lines} lines")
    return out


def test_no_module_is_over_600_lines_unless_the_readme_says_why():
    long = too_long(ROOT, (ROOT / "README.md").read_text(encoding="utf-8"))
    assert not long, "split these, or say why in the README's layout section:\n" + "\n".join(long)


def test_the_check_finds_a_long_file(tmp_path):
    (tmp_path / "steps").mkdir()
    (tmp_path / "batchtui").mkdir()
    (tmp_path / "steps" / "long.py").write_text("x = 1\n" * (LIMIT + 1), encoding="utf-8")
    (tmp_path / "batchtui" / "short.py").write_text("x = 1\n" * LIMIT, encoding="utf-8")
    assert too_long(tmp_path, "") == [f"steps/long.py: {LIMIT + 1} lines"]
    readme = "Files are kept under 600 lines; one is longer, and why:\n\n- `steps/long.py` (about 600 lines): a table.\n"
    assert too_long(tmp_path, readme) == []
