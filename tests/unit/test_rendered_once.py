"""A renderable drawn once per width shows what a direct render shows, and is not drawn again."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from batchtui.widgets.rendered_once import RenderedOnce


def grid(built: list[int]) -> Table:
    built.append(1)
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column()
    for i in range(12):
        table.add_row(Text(f"ctrl+{i}", style="bold"), "a help text long enough to wrap at a narrow width " * 2)
    return table


def lines(console: Console, renderable, width: int) -> list[str]:
    return ["".join(seg.text for seg in line)
            for line in console.render_lines(renderable, console.options.update_width(width), pad=False)]


def test_it_shows_what_the_table_shows_and_is_drawn_once_per_width():
    console = Console(width=120, file=open("/dev/null", "w"))
    built: list[int] = []
    once = RenderedOnce(("test", 1), lambda: grid(built))
    for width in (72, 40):
        direct = lines(console, grid([]), width)
        assert lines(console, once, width) == direct
        drawn = len(built)
        assert lines(console, RenderedOnce(("test", 1), lambda: grid(built)), width) == direct
        assert len(built) == drawn  # a new instance with the same key: kept, not drawn again
    other = RenderedOnce(("test", 2), lambda: grid(built))
    drawn = len(built)
    lines(console, other, 72)
    assert len(built) == drawn + 1  # another key: drawn
