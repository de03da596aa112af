"""The footer's keys on the tutorial screen: the keys that work now, in the words of what they
do now. A pure function of what it is given: the screen passes its parts in (`KeysState.of`) and
shows the result.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.widgets import Input

DEFAULT_KEYS = ("step.next", "step.previous", "sim.run_pause", "view.zoom", "sim.single_iteration",
                "step.contents", "step.hint", "app.help", "app.quit")
"""The footer's keys when the lesson has the keys, most wanted first (the end gives way at 80
columns, except `?`)."""
DIAL_KEYS = ("dial.adjust", "dial.move", "dial.type", "focus.lesson", "sim.run_pause", "app.help")
TYPING_KEYS = ("answer.submit", "answer.leave", "chord.hint", "answer.give_up", "chord.next",
               "chord.previous", "chord.contents", "chord.help", "chord.quit")


@dataclass(frozen=True)
class KeysState:
    """What the footer depends on."""

    focus: str
    """"typing" (an answer box or a dial's box), "dial" or "lesson"."""
    dial_numeric: bool = False
    """The focused dial takes a typed value (a choice dial moves with the arrows only)."""
    takes_choices: bool = False
    """The activity takes number keys now."""
    choices: int = 0
    """How many (the key is shown as `1-choices`)."""
    has_input: bool = False
    has_dials: bool = False
    playground: bool = False
    pages: int = 1
    page: int = 0
    give_up_label: str = ""
    pins: bool = False
    """`b` works here (the step runs no setting beside its own)."""
    pinned: bool = False
    running: bool = False
    zoomed: bool = False
    multi_turn: bool = False

    @classmethod
    def of(cls, focused, panel, step, stack, before, running: bool, zoomed: bool, run) -> KeysState:
        """The state of the tutorial's parts: the focused widget, the activity panel, the step on
        show, the views (`ViewStack`), the "before" (`BeforeAfter`) and the live run (or None)."""
        from ..widgets.dial import DialControl
        from .playground import Playground

        dial = isinstance(focused, DialControl)
        return cls(focus="typing" if isinstance(focused, Input) else "dial" if dial else "lesson",
                   dial_numeric=dial and focused.spec.is_numeric, takes_choices=panel.takes_choices,
                   choices=panel.choice_count, has_input=panel.has_input, has_dials=bool(step.dials),
                   playground=Playground.on(step), pages=stack.page_count, page=stack.page,
                   give_up_label=panel.give_up_label or "", pins=before.pins(step), pinned=before.pinned is not None,
                   running=running, zoomed=zoomed,
                   multi_turn=(run.scenario if run is not None else step.scenario).workload.turns > 1)


def footer_keys(state: KeysState) -> tuple[tuple[str, ...], dict[str, str], dict[str, str]]:
    """The footer's key ids (`keys.py`), their labels where they differ from the table's, and
    their keys' text where it does (`1-3`)."""
    if state.focus == "typing":
        ids = TYPING_KEYS
    elif state.focus == "dial":
        ids = tuple(k for k in DIAL_KEYS if k != "dial.type" or state.dial_numeric)
    else:
        ids = list(DEFAULT_KEYS)
        if state.takes_choices:
            ids.insert(0, "answer.choose")
        if state.has_dials or state.has_input:
            ids.insert(ids.index("view.zoom"), "dial.reach")
        if state.playground:
            ids.insert(ids.index("view.zoom"), "playground.helpdesk")
        if state.pages > 1:
            ids.insert(ids.index("view.zoom"), "view.next_page")
        if state.give_up_label:
            ids.insert(ids.index("view.zoom"), "answer.give_up")
        if state.pins:
            ids.insert(ids.index("view.zoom") + 1, "sim.pin")
        ids = tuple(ids)
    labels = {"sim.run_pause": "pause"} if state.running else {}
    if state.has_input:
        labels["dial.reach"] = "answer"  # the answer box comes first in the tab order
    if state.pages > 1:
        labels["view.next_page"] = f"views {state.page + 1}/{state.pages}"
    if state.zoomed:
        labels["view.zoom"] = "unzoom"
    if state.pinned:
        labels["sim.pin"] = "unpin"
    if state.multi_turn:
        labels["playground.helpdesk"] = "single-turn"
    if state.give_up_label:
        labels["answer.give_up"] = state.give_up_label
    key_text = {"answer.choose": f"1-{state.choices}"} if state.choices else {}
    return ids, labels, key_text
