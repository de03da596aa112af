"""What every simulation view shares: it is fed `EngineSnapshot`s and draws from the last one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
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

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.snapshot: EngineSnapshot | None = None
        """The last snapshot shown. Not reactive: views are refreshed once per frame, by hand."""
        self._text: Text | None = None
        self._text_width = -1

    def update_snapshot(self, snapshot: EngineSnapshot) -> None:
        """Show a new state of the engine."""
        self.snapshot = snapshot
        self.redraw()

    def redraw(self) -> None:
        """Rebuild the text; refresh only if it changed, and lay out again only if its height did.

        Many frames change nothing in a view (a paused queue, a steady cache): those write no bytes.
        """
        old = self._text
        self._text = None
        width = self.content_width
        if width <= 0 or old is None:
            self.refresh(layout=True)
            return
        new = self._get_text(width)
        if new == old:
            return
        self.refresh(layout=new.plain.count("\n") != old.plain.count("\n"))

    def build(self, width: int) -> Text:
        """The view as text `width` cells wide. Subclasses override."""
        raise NotImplementedError

    def _get_text(self, width: int) -> Text:
        if self._text is None or self._text_width != width:
            self._text = self.build(max(width, 1))
            self._text.no_wrap = True
            self._text.overflow = "crop"
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
        """The Rich style of one of this view's component classes (colours come from the theme)."""
        return self.get_component_rich_style(component, partial=True)


def encoder_pass_size(snapshot) -> int:
    """Requests the last iteration carried when it was an encoder pass (dynamic batching of an
    embedder: each request is one pass, begun and finished in the same iteration); else 0."""
    report = snapshot.last if snapshot is not None else None
    if report is None or snapshot.running or report.scheduled or not report.finished:
        return 0
    return len(report.finished)
