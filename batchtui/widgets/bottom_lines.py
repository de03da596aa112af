"""The tutorial's bottom lines: a notice, the goal line and the footer of keys.

A notice (a refused value, what `--gpu` found) stands in for the goal line until the learner's
next key, unless that key says something new; a standing notice stays through step openings
until the first key. The screen says things (`say`), tells of keys (`key_arrived`) and gives the
goal and the keys' state to show.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.containers import Vertical

from .goal_bar import GoalBar
from .key_bar import KeyBar
from .notice_line import NoticeLine


class BottomLines(Vertical):
    """Notice, goal line and keys, docked at the bottom."""

    def __init__(self, ascii_only: bool, sep: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ascii_only, self.sep = ascii_only, sep
        """`--ascii`, and the separator the glyphs use."""
        self._notice_key = 0
        """Counts the notices said, so a key press clears only the one it found."""
        self.standing = ""
        """A notice that stays through step openings until the learner's first key (what
        `--gpu` found: the lookup may answer before the first step is drawn)."""
        self.says_running = False
        """The footer's label for space says "pause": the run was running when it was drawn."""

    def compose(self):
        yield NoticeLine(id="notice")
        goal, keys = GoalBar(id="goal"), KeyBar(id="keys")
        goal.set_marks(self.ascii_only, self.sep)
        keys.ascii_only = self.ascii_only
        yield goal
        yield keys

    def say(self, message: str, error: bool = False) -> None:
        """Put a line in front of the learner, in place of the goal, until the next key."""
        self._notice_key += 1
        self.query_one(NoticeLine).say(self.app.words(message), error)
        self.query_one(GoalBar).display = not message

    def stand(self, message: str) -> None:
        """Say `message` and keep it through step openings until the learner's first key."""
        self.standing = message
        self.say(message)

    def key_arrived(self) -> Callable[[], object] | None:
        """A key reached the screen: the standing notice is over. Returns what clears the notice
        on show (to call once the key is acted on: the goal comes back, unless the key said
        something new), or None."""
        self.standing = ""
        if self.query_one(NoticeLine).message:
            said = self._notice_key
            return lambda: self._notice_key == said and self.say("")
        return None

    def show_goal(self, view, step_goal, completed: bool) -> bool:
        """The goal line (`GoalBar.show_goal`): True if the step's goal is newly done."""
        return self.query_one(GoalBar).show_goal(view, step_goal, completed)

    def show_keys(self, key_ids, labels, key_text, running: bool) -> None:
        """The footer's keys (`tutorial_lines.footer_keys`), drawn for a run `running` or not."""
        self.says_running = running
        self.query_one(KeyBar).show_keys(key_ids, labels, key_text)
