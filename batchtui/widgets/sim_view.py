"""What every simulation view shares: it is fed `EngineSnapshot`s and draws from the last one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.geometry import Region
from textual.widget import Widget

from ..glyphs import UNICODE, Glyphs

if TYPE_CHECKING:
    from sim.reports import EngineSnapshot


class SimView(Widget):
    """A view of the live engine, drawn as one `rich.Text` per frame by `build(width)`.

    One Text per frame lets neighbouring cells of the same state share one escape sequence,
    which keeps bytes on the wire low (STYLE.md). The text is cached per snapshot and width,
    and the layout is only redone when the number of lines changes.
    """

    DEFAULT_CSS = """
    SimView {
        height: auto;
        text-wrap: nowrap;
        text-overflow: clip;
    }
    """

    view_name = ""
    """The name a step uses for this view in its `views` list."""
    LINES: int | None = None
    """Lines the view always draws; None: as many as its text has (views that can draw in fewer
    lines than they would like override `min_lines` and `wanted_lines`)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        self._rich_styles: dict[str, object] = {}
        super().__init__(id=id, classes=classes)
        self.snapshot: EngineSnapshot | None = None
        """The last snapshot shown. Not reactive: views are refreshed once per frame, by hand."""
        self.max_lines: int | None = None
        """The most lines the view may draw (set by the view stack); None: as many as it likes."""
        self._text: Text | None = None
        self._text_width = -1

    # -- how tall: the view stack gives every view its minimum, then the spare lines
    def min_lines(self, width: int) -> int:
        """The fewest lines this view can draw its state in at `width`."""
        if self.LINES is not None:
            return self.LINES
        return self.build(max(width, 1)).plain.count("\n") + 1

    def tight_lines(self, width: int) -> int:
        """Fewer lines still, drawn only when that spares the learner a page (a short
        terminal): the view leaves out what another view also shows."""
        return self.min_lines(width)

    def wanted_lines(self, width: int) -> int:
        """The lines it would draw with room to spare (at least `min_lines`)."""
        return self.min_lines(width)

    def comfortable_lines(self, width: int) -> int:
        """Lines worth more than a blank line between views (given before the gaps are)."""
        return self.wanted_lines(width)

    def set_max_lines(self, lines: int | None) -> None:
        """The view stack sets this together with the view's height."""
        if lines != self.max_lines:
            self.max_lines = lines
            self._text = None
            self.refresh()

    def update_snapshot(self, snapshot: EngineSnapshot) -> None:
        """Show a new state of the engine."""
        self.snapshot = snapshot
        self.redraw()

    source = "main"
    """Which run of a frame this view draws: "main", or "compare" for the run beside it."""

    def update_frame(self, frames) -> None:
        """A frame's snapshots by source ("main", "compare", "pinned"): draw this view's own."""
        snapshot = frames.get(self.source)
        if snapshot is not None:
            self.update_snapshot(snapshot)

    def redraw(self) -> None:
        """Rebuild the text; refresh only the lines that changed, and lay out again only if its
        height did.

        Many frames change nothing in a view (a paused queue, a steady cache), and most change a
        line or two of it (a count, not the bar under it): Textual writes only the lines
        refreshed, so the lines that stay as they were write no bytes.
        """
        old = self._text
        old_width = self._text_width
        self._text = None
        width = self.content_width
        # Given a height by the view stack, the view never needs the screen laid out again.
        sized = self.max_lines is not None
        if width <= 0 or old is None:
            self.refresh(layout=not sized)
            return
        new = self._get_text(width)
        if new == old:
            return
        changed = changed_lines(old, new) if width == old_width else None
        if changed is None:
            self.refresh(layout=not sized and new.plain.count("\n") != old.plain.count("\n"))
        else:
            self.refresh(*(Region(0, y, width, 1) for y in changed))

    def build(self, width: int) -> Text:
        """The view as text `width` cells wide. Subclasses override."""
        raise NotImplementedError

    def _get_text(self, width: int) -> Text:
        if self._text is None or self._text_width != width:
            text = self.build(max(width, 1))
            if self.max_lines is not None and text.plain.count("\n") >= self.max_lines:
                # A view that cannot draw itself smaller is cut rather than pushing others off.
                lines = text.split("\n", allow_blank=True)[: max(1, self.max_lines)]
                text = Text("\n").join(lines)
            text.no_wrap = True
            text.overflow = "crop"
            self._text = text
            self._text_width = width
        return self._text

    def get_content_height(self, container, viewport, width: int) -> int:
        return self._get_text(width).plain.count("\n") + 1

    def render(self) -> Text:
        return self._get_text(self.content_width)

    @property
    def content_width(self) -> int:
        """Cells across the content, from the size the last layout gave this widget.

        Not `content_size`: that asks the compositor for the widget's region, and for a view
        scrolled out of sight it lays out the whole screen again, every frame."""
        return max(0, self.outer_size.width - self.styles.gutter.width)

    @staticmethod
    def append_runs(text: Text, cells) -> None:
        """Append (glyph, style) cells, merging neighbours of the same style into one span.

        Textual writes one escape sequence per span: a span per cell would cost ~25 bytes a cell.
        """
        run_style, run = None, []
        for glyph, style in cells:
            if style != run_style and run:
                text.append("".join(run), run_style)
                run = []
            run_style = style
            run.append(glyph)
        if run:
            text.append("".join(run), run_style)

    @property
    def glyphs(self) -> Glyphs:
        settings = getattr(self.app, "settings", None)
        return settings.glyphs if settings is not None else UNICODE

    def style_of(self, component: str):
        """The Rich style of one of this view's component classes (colours come from the theme).

        Kept until the styles change: Textual works one out in about 0.2 ms, and a frame asks for
        a dozen per view."""
        style = self._rich_styles.get(component)
        if style is None:
            style = self._rich_styles[component] = self.get_component_rich_style(component, partial=True)
        return style

    def notify_style_update(self) -> None:
        self._rich_styles.clear()
        self._text = None
        super().notify_style_update()


def changed_lines(old: Text, new: Text) -> list[int] | None:
    """The numbers of the lines (text and styles) that differ between two texts of as many
    lines; None when the number of lines differs."""
    old_lines = old.split("\n", allow_blank=True)
    new_lines = new.split("\n", allow_blank=True)
    if len(old_lines) != len(new_lines):
        return None
    return [y for y, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b]


def encoder_pass_size(snapshot) -> int:
    """Requests the last iteration carried when it was an encoder pass (dynamic batching of an
    embedder: each request is one pass, begun and finished in the same iteration); else 0."""
    report = snapshot.last if snapshot is not None else None
    if report is None or snapshot.running or report.scheduled or not report.finished:
        return 0
    return len(report.finished)


def seat_capacity(snapshot) -> int:
    """The seats this server can fill: its seats (one for a sequential server, whatever cells
    are drawn), or more while a batch formed before the cap was lowered still holds them."""
    if snapshot.batching == "sequential":
        return snapshot.max_num_seqs
    return max(snapshot.max_num_seqs, len(snapshot.seats))
