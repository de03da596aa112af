"""The bottom line: the keys that do something right now, from the central table."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widget import Widget

from ..keys import BY_ID, display_keys

ALWAYS_SHOWN = frozenset({"app.help", "chord.help"})
"""Keys the footer keeps however narrow it is: the way to every other key."""


class KeyBar(Widget):
    """Shows `key label` pairs for the ids it is given, in order, as many as fit."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"key-bar--key", "key-bar--label"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.key_ids: tuple[str, ...] = ()
        self.labels: dict[str, str] = {}
        self.key_text: dict[str, str] = {}
        self.ascii_only = False

    def show_keys(self, key_ids: tuple[str, ...], labels: dict[str, str] | None = None,
                  key_text: dict[str, str] | None = None) -> None:
        """The ids to show; `labels` overrides a label (run becomes pause while running) and
        `key_text` how a key is written (1-3 when there are three choices)."""
        labels, key_text = labels or {}, key_text or {}
        if (key_ids, labels, key_text) != (self.key_ids, self.labels, self.key_text):
            self.key_ids, self.labels, self.key_text = key_ids, labels, key_text
            self.refresh()

    def render(self) -> Text:
        width = self.content_size.width
        key_style = self.get_component_rich_style("key-bar--key", partial=True)
        label_style = self.get_component_rich_style("key-bar--label", partial=True)
        pieces = []
        for key_id in self.key_ids:
            key = BY_ID[key_id]
            shown = self.key_text.get(key_id) or display_keys(key, self.ascii_only, first_only=True)
            pieces.append((key_id, f" {shown} ", f"{self.labels.get(key_id, key.label)} "))
        # The help key always stays in sight: the others give way, from the end, to make room.
        room = width - sum(len(k) + len(l) for i, k, l in pieces if i in ALWAYS_SHOWN)
        kept = []
        for key_id, key_text, label in pieces:
            if key_id in ALWAYS_SHOWN:
                kept.append((key_text, label))
                continue
            if len(key_text) + len(label) - 1 > room:
                room = -1  # and nothing after it, so the order stays the table's
                continue
            room -= len(key_text) + len(label)
            kept.append((key_text, label))
        text = Text(no_wrap=True, overflow="crop")
        for key_text, label in kept:
            text.append(key_text, key_style)
            text.append(label, label_style)
        text.rstrip()
        return text
