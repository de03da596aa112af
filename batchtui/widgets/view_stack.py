"""The step's views, laid out to fit the pane they are given: one column, or two on a wide pane,
each view given the lines it needs; views that do not fit go on further pages (`v`).

Nothing here scrolls: a view is either wholly in sight or on another page, which the status line
names. A view is made (once per column) the first time it is asked for, and from then on only
shown or hidden: a step mounts the views it shows, not all nine, and a later arrangement (a
resize, a page, zoom) of views already made mounts nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from textual.containers import Horizontal, Vertical
from textual.message import Message

from .sim_view import SimView

TWO_COLUMNS_FROM = 70
"""Pane width (cells) from which the views go in two columns."""
MAX_COLUMNS = 2


class ViewKind(NamedTuple):
    """A view the stack can show: its name and how to make one."""

    name: str
    make: Callable[..., SimView]
    """Called with `id` and `classes`."""


class Placement(NamedTuple):
    name: str
    lines: int
    gap: int
    """Blank lines under it."""


def pack(names: Sequence[str], sizes: Mapping[str, tuple[int, int, int]], columns: int,
         height: int, tight: Mapping[str, int] | None = None) -> list[list[list[Placement]]]:
    """Pages of columns of views. `sizes` gives each view's (fewest, comfortable, most) lines;
    `tight`, fewer lines still for some views, used only if the views then take fewer pages or
    the first page holds more of them.

    Views go in order, each into the emptier column of the page with room for its fewest lines
    (a view taller than a whole column gets one to itself); then each column's spare lines go
    first to views that reach their comfortable size with them (an iteration view's full form),
    then one blank line between views, then to views that can use more (more rows of seats)."""
    pages = _pack(names, sizes, columns, height)
    if tight and len(pages) > 1:
        tighter = {name: (min(tight.get(name, low), low), comfortable, most)
                   for name, (low, comfortable, most) in sizes.items()}
        fewer = _pack(names, tighter, columns, height)
        if (len(fewer), -_count(fewer[0])) < (len(pages), -_count(pages[0])):
            return fewer
    return pages


def _count(page: list[list[Placement]]) -> int:
    return sum(len(column) for column in page)


def _pack(names: Sequence[str], sizes: Mapping[str, tuple[int, int, int]], columns: int,
          height: int) -> list[list[list[Placement]]]:
    pages: list[list[list[str]]] = []
    page: list[list[str]] = [[] for _ in range(columns)]
    used = [0] * columns
    for name in names:
        need = sizes[name][0]
        room = [c for c in range(columns) if not page[c] or used[c] + need <= height]
        if room:
            c = min(room, key=lambda c: used[c])  # the emptier column, so the two stay even
            page[c].append(name)
            used[c] += need
        else:
            pages.append(page)
            page = [[name]] + [[] for _ in range(columns - 1)]
            used = [need] + [0] * (columns - 1)
    if any(page):
        pages.append(page)
    return [[_fill(column, sizes, height) for column in page] for page in pages] or [[[] for _ in range(columns)]]


def _fill(column: list[str], sizes: Mapping[str, tuple[int, int, int]], height: int) -> list[Placement]:
    lines = {name: sizes[name][0] for name in column}
    spare = height - sum(lines.values())
    for name in column:  # comfortable sizes, all or nothing
        extra = sizes[name][1] - lines[name]
        if 0 < extra <= spare:
            lines[name] += extra
            spare -= extra
    gaps = [0] * len(column)
    for i in range(len(column) - 1):
        if spare > 0:
            gaps[i] = 1
            spare -= 1
    for name in column:  # and what else they can use
        extra = min(spare, sizes[name][2] - lines[name])
        if extra > 0:
            lines[name] += extra
            spare -= extra
    return [Placement(name, lines[name], gap) for name, gap in zip(column, gaps)]


class ViewStack(Horizontal):
    """Shows the views named by `show(names)`, paged to fit. `update_frame` feeds them."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")

    class Arranged(Message):
        """The pages changed (a new step, size or page): the screen says which page is shown."""

    def __init__(self, kinds: Sequence[ViewKind], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.kinds = tuple(kinds)
        self.names: tuple[str, ...] = ()
        self.pages: list[list[list[Placement]]] = []
        self.page = 0
        self.frames: dict[str, object] = {}
        """The last snapshot of each source ("main", "compare", "pinned")."""
        self._sizes: dict[str, tuple[int, int, int]] = {}
        self._shape: tuple[int, int] = (0, 0)
        self.shown_ids: set[str] = set()
        self._made: dict[tuple[str, int], SimView] = {}
        self._columns: list[Vertical] = []

    def compose(self):
        self._columns = [Vertical(*(view for (_, column), view in self._made.items() if column == c),
                                  id=f"view-column-{c}", classes="view-column") for c in range(MAX_COLUMNS)]
        yield from self._columns

    # -- which views
    def _view(self, name: str, column: int) -> SimView:
        """The view `name` of a column, made hidden the first time it is asked for.

        Each part a view colours is a component class, which Textual styles as one more node
        whenever it styles the view (on mount, and again when the screen is resumed): with every
        view made up front, parts were three quarters of the nodes a start styled. Made when
        first asked for, step 1 styles 249 nodes instead of 515 and opens in ~25 % less CPU."""
        view = self._made.get((name, column))
        if view is None:
            kind = next(kind for kind in self.kinds if kind.name == name)
            view = self._made[(name, column)] = kind.make(id=f"view-{name}-{column}", classes="view")
            view.display = False
            # Mounted at once if its column is; a view asked for before the columns are mounted is
            # mounted with them (compose), and one asked for while the app closes (a step's start
            # run after a quit in the same read) is never shown.
            if self._columns and self._columns[column].is_attached:
                self._columns[column].mount(view)
        return view

    def views(self, name: str, make: bool = True) -> list[SimView]:
        """Every instance of one view (one per column); with `make` False only those made so far
        (to reset a view that is made later with its defaults anyway)."""
        if make:
            return [self._view(name, c) for c in range(MAX_COLUMNS)]
        return [view for c in range(MAX_COLUMNS) if (view := self._made.get((name, c))) is not None]

    def shown(self) -> list[SimView]:
        """The views in sight, top to bottom, left column first."""
        if not self.pages:
            return []
        return [self._view(p.name, c) for c, column in enumerate(self.pages[self.page]) for p in column]

    @property
    def page_count(self) -> int:
        return len(self.pages)

    def page_names(self, page: int) -> list[str]:
        return [p.name for column in self.pages[page] for p in column] if page < len(self.pages) else []

    def show(self, names: Sequence[str], keep_frames: bool = False, page_of: str | None = None) -> None:
        """Show these views (in this order), from the first page, or from the page that holds
        `page_of`. `keep_frames`: the same runs go on (a view came or went, not a new step)."""
        self.names = tuple(names)
        self.page = 0
        if not keep_frames:
            self.frames = {}
        self.fit()
        if page_of is not None:
            for page in range(len(self.pages)):
                if page_of in self.page_names(page):
                    if page != self.page:
                        self.page = page
                        self.fit()
                    break

    def next_page(self) -> None:
        if len(self.pages) > 1:
            self.page = (self.page + 1) % len(self.pages)
            self.fit()

    # -- layout
    def on_resize(self) -> None:
        self.fit()

    def fit(self) -> None:
        width, height = self.size
        if width <= 0 or height <= 0:
            return
        columns = MAX_COLUMNS if width >= TWO_COLUMNS_FROM else 1
        column_width = (width - (columns - 1)) // columns  # one cell between columns
        self._shape = (columns, column_width)
        self._sizes = self._measure(column_width)
        tight = {name: self._view(name, 0).tight_lines(column_width) for name in self.names}
        self.pages = pack(self.names, self._sizes, columns, height, tight)
        self.page = min(self.page, len(self.pages) - 1)
        self.set_class(columns > 1, "-two-columns")
        was_shown = set(self.shown_ids)
        placed = {}
        for c, column in enumerate(self.pages[self.page]):
            for p in column:
                placed[(p.name, c)] = p
        for c in range(MAX_COLUMNS):
            container = self._columns[c]
            container.display = c < columns
            order = [self._view(p.name, c) for p in (self.pages[self.page][c] if c < columns else [])]
            for (name, column), view in list(self._made.items()):
                if column != c:
                    continue
                p = placed.get((name, c))
                if p is None:
                    view.display = False
                    continue
                view.styles.height = p.lines
                view.styles.margin = (0, 0, p.gap, 0)
                view.set_max_lines(p.lines)
                if not view.display:
                    view.display = True
                    view.update_frame(self.frames)
            current = [child for child in container.children if child in order]
            if current != order:
                for view in reversed(order):
                    container.move_child(view, before=0)
        self.shown_ids = {view.id for view in self.shown()}
        if was_shown - self.shown_ids:
            # Views went out of sight: paint the whole screen once laid out. Textual's partial
            # update can leave their old lines on the terminal when a scroll (the lesson pane
            # bringing an answer into view) is laid out in the same frame.
            self.call_after_refresh(self.screen.refresh)
        self.post_message(self.Arranged())

    def _measure(self, width: int) -> dict[str, tuple[int, int, int]]:
        sizes = {}
        for name in self.names:
            view = self._view(name, 0)
            fewest = view.min_lines(width)
            most = max(fewest, view.wanted_lines(width))
            sizes[name] = (fewest, min(most, max(fewest, view.comfortable_lines(width))), most)
        return sizes

    # -- frames
    def update_frame(self, frames: Mapping[str, object]) -> None:
        """New snapshots: the views in sight draw them; the layout follows if a view's size
        changed (a seats dial moved, a sweep arrived)."""
        self.frames.update(frames)
        for view in self.shown():
            view.update_frame(self.frames)
        self.check_sizes()

    def check_sizes(self) -> None:
        columns, width = self._shape
        if width and self._measure(width) != self._sizes:
            self.fit()
