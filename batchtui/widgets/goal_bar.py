"""The line above the keys: what this step asks of the learner, and whether it is still open: the
activity's own goal when it has one (a prediction, a drill), else the step's checklist
(`batchtui/goals.py`, given by the screen)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widget import Widget

STATES = ("open", "answered", "done")


class GoalBar(Widget):
    """`show(ask, state, note, shorter, shorter_notes)`: the ask on the left ("Predict: ..."; a
    shorter form of it, or of its note, where the line is narrow), the state on the right with a
    mark that reads without colour (`[ ]` open, `[~]` answered, `[x]` done)."""

    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"goal-bar--label", "goal-bar--open", "goal-bar--answered", "goal-bar--done"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ask = ""
        self.state = "open"
        self.note = ""
        """A few words after the state ("2 of 3", "right", "wrong")."""
        self.shorter: tuple[str, ...] = ()
        """Shorter forms of the ask, longest first (`Goal.shorter`)."""
        self.shorter_notes: tuple[str, ...] = ()
        """Shorter forms of the note, longest first (`Goal.shorter_notes`)."""
        self.marks = {"open": "○", "answered": "◐", "done": "✓"}
        self.sep = " · "
        """Between the ask and its note."""

    def set_marks(self, ascii_only: bool, sep: str) -> None:
        """The marks and the separator this terminal shows (`--ascii`: `[x]`, ` | `)."""
        self.sep = sep
        if ascii_only:
            self.marks = {"open": "[ ]", "answered": "[~]", "done": "[x]"}

    def show_goal(self, view, step_goal, completed: bool) -> bool:
        """The line for the activity `view` on show (or None) and the step's own goal (or None),
        given whether the step was `completed` before (`goal_line`). True if the step's goal is
        done now for the first time (the screen records it)."""
        line, newly_done = goal_line(view, step_goal, completed)
        if line is not None:
            ask, state, note, shorter, shorter_notes = line
            words = self.app.words
            self.show(words(ask), state, words(note), tuple(map(words, shorter)), tuple(map(words, shorter_notes)))
        return newly_done

    def show(self, ask: str, state: str = "open", note: str = "", shorter: tuple[str, ...] = (),
             shorter_notes: tuple[str, ...] = ()) -> None:
        line = (ask, state, note, shorter, shorter_notes)
        if line != (self.ask, self.state, self.note, self.shorter, self.shorter_notes):
            self.ask, self.state, self.note, self.shorter, self.shorter_notes = line
            self.set_class(state == "done", "-done")
            self.refresh()

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        if not self.ask:
            return text
        label, ask, gap, state = self.parts(self.content_size.width)
        text.append(label, self.get_component_rich_style("goal-bar--label", partial=True))
        text.append(ask + gap)
        text.append(state, self.get_component_rich_style(f"goal-bar--{self.state}", partial=True))
        return text

    def parts(self, width: int) -> tuple[str, str, str, str]:
        """The line `width` wide: its label, the ask with its note, the gap, the state."""
        label = "Goal "
        # The ask's forms with the whole note, then with each shorter note: the first that fits
        # with the state's word; where none does, the shortest: the state's word goes first,
        # then the ask is cut.
        asks = [self.line(form, note) for note in (self.note, *self.shorter_notes)
                for form in (self.ask, *self.shorter)]
        for state in (f"{self.marks[self.state]} {self.state}", self.marks[self.state]):
            fits = [ask for ask in asks if len(label) + len(ask) + 2 + len(state) <= width]
            if fits:
                ask = fits[0]
                break
        else:
            ask = asks[-1]
        room = width - len(label) - len(state) - 2
        if len(ask) > room:
            ask = ask[: max(0, room - 3)] + "..."
        return label, ask, " " * max(2, width - len(label) - len(ask) - len(state)), state

    def line(self, ask: str, note: str) -> str:
        """One form of the ask with a form of the note after it."""
        joint = " " if ask.endswith(":") else self.sep  # a checklist follows its colon
        return f"{ask}{joint}{note}" if note else ask


def goal_line(view, step_goal, completed: bool) -> tuple[tuple | None, bool]:
    """The goal line (ask, state, note, shorter forms of the ask, of the note) for the activity `view` on show
    (or None) and the step's own goal `step_goal` (or None), given whether the step was
    `completed` before; and whether the step's goal is done now for the first time (to be
    recorded). No line: nothing asks."""
    goal = view.goal() if view is not None else None
    if goal is not None and goal.ask:
        state, note = goal.state, goal.note
        if state == "open" and view.done_before:  # asked again; the table of contents says done
            state, note = "done", note or "done before"
        return (goal.ask, state, note, goal.shorter, goal.shorter_notes if note == goal.note else ()), False
    if step_goal is None:
        return None, False
    done = step_goal.done
    newly_done = done and not completed
    before = step_goal.completable and (completed or newly_done)
    state = "done" if done or before else "open"
    note = step_goal.note() or ("done before" if before else "")
    shorter_notes = (step_goal.note(short=True),) if note == step_goal.note() else ()
    return (step_goal.ask, state, note, (), tuple(n for n in shorter_notes if n != note)), newly_done
