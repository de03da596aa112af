"""The key table and the screen captures of the README and the manual are what the app has and shows.

Both are written from the app between marker comments in README.md and docs/tutorial.md:

    <!-- keys: written by tests/app/test_readme.py --> ... <!-- end keys -->
    <!-- capture: step=20 keys= --> ... <!-- end capture -->
    <!-- capture: step=6 keys= size=80x23 --> ... <!-- end capture -->

A capture is the screen (80x24 unless a size is given) after the keys given (space-separated
Textual key names) and SECONDS of simulated time, under the same manual clock as every app test.
When the app changes, `python tests/app/test_readme.py` writes them again (atomically); then read
the diff.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = (README, ROOT / "docs" / "tutorial.md")
SECONDS = 20.0
KEYS_BLOCK = re.compile(r"(<!-- keys: [^>]*-->\n)(.*?)(<!-- end keys -->)", re.S)
CAPTURE_BLOCK = re.compile(r"(<!-- capture: step=(\d+) keys=([^>]*?)(?: size=(\d+)x(\d+))? -->\n)(.*?)"
                           r"(<!-- end capture -->)", re.S)


def key_table() -> str:
    """Every key of batchtui/keys.py, grouped as the help screen groups them."""
    from batchtui import keys

    lines = ["| | keys | what they do |", "|---|---|---|"]
    for group in keys.GROUPS:
        first = True
        for key in keys.KEYS:
            if key.group == group:
                shown = keys.display_keys(key).replace("|", "\\|")
                lines.append(f"| {group if first else ''} | `{shown}` | {key.help} |")
                first = False
    return "\n".join(lines) + "\n"


async def capture(step: int, presses: list[str], state_dir: Path, size: tuple[int, int] = (80, 24)) -> str:
    """The screen of `step` at `size` after `presses` and SECONDS of simulated time."""
    sys.path.insert(0, str(Path(__file__).parent))
    from batchtui.app import BatchApp
    from batchtui.progress import Progress, ProgressStore
    from batchtui.settings import AppSettings
    from manual_clock import ManualClock
    from screen_text import screen_text
    from tests import shared_steps

    ProgressStore(state_dir).save(Progress())
    app = BatchApp(shared_steps.lessons(), AppSettings(clock=ManualClock(), cursor_blink=False,
                                                        state_dir=state_dir, start_step=step))
    async with app.run_test(size=size) as pilot:
        for key in presses:
            await pilot.press(key)
        app.screen.sim.fast_forward(SECONDS)
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
    return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))


def _size(width: str, height: str) -> tuple[int, int]:
    return (int(width), int(height)) if width else (80, 24)


def rendered(text: str, state_dir: Path) -> str:
    """A document as the app would write it now."""
    text = KEYS_BLOCK.sub(lambda m: m.group(1) + key_table() + m.group(3), text)

    def one(m: re.Match) -> str:
        shot = asyncio.run(capture(int(m.group(2)), m.group(3).split(), state_dir / f"capture-{m.start()}",
                                   _size(m.group(4), m.group(5))))
        return f"{m.group(1)}```text\n{shot}\n```\n{m.group(7)}"

    return CAPTURE_BLOCK.sub(one, text)


def test_the_manuals_key_table_lists_every_key():
    text = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    block = KEYS_BLOCK.search(text)
    assert block, "docs/tutorial.md has no generated key table"
    assert block.group(2) == key_table(), "the key table is stale: python tests/app/test_readme.py"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_captures_are_the_screens_the_app_draws(tmp_path, monkeypatch, document):
    monkeypatch.delenv("NO_COLOR", raising=False)
    text = document.read_text(encoding="utf-8")
    found = CAPTURE_BLOCK.findall(text)
    assert found, f"{document.name} has no screen captures"
    for index, (head, step, presses, width, height, body, tail) in enumerate(found):
        shot = asyncio.run(capture(int(step), presses.split(), tmp_path / f"capture-{index}", _size(width, height)))
        assert body == f"```text\n{shot}\n```\n", \
            f"{document.name}: capture of step {step} is stale: python tests/app/test_readme.py\n{shot}"


def main() -> int:
    """Write the documents' generated parts again: each to a temporary file, then renamed into place."""
    from tools import docs_tables

    os.environ.pop("NO_COLOR", None)
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory() as state:
            new = rendered(text, Path(state))
        docs_tables.write_again(document, new)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
