"""The step's question on the tutorial screen, around the activity panel: the goal line (the
activity's own goal, or the step's checklist from `batchtui/goals.py`) and the hints (a drill
question's own before the step's)."""

from __future__ import annotations

from .. import keys
from ..widgets.activity_panel import ActivityPanel
from ..widgets.goal_bar import GoalBar
from ..widgets.hint_box import HintBox
from ..widgets.pane import Pane


class Question:
    """The goal line and hints of one tutorial screen."""

    def __init__(self, screen) -> None:
        self.screen = screen

    def update_goal(self) -> None:
        """The goal line: the activity's own goal, or the step's (done once it is done); then
        the reveal, which waits for the answer."""
        screen = self.screen
        view = screen.query_one(ActivityPanel).view
        goal = view.goal() if view is not None else None
        words = screen.app.words
        step_goal = screen.goal
        if goal is not None and goal.ask:
            state, note = goal.state, goal.note
            if state == "open" and view.done_before:  # asked again; the table of contents says done
                state, note = "done", note or "done before"
            screen.query_one(GoalBar).show(words(goal.ask), state, words(note))
        elif step_goal is not None:
            number = screen.step.number
            progress = screen.app.progress
            done = step_goal.done
            if done and number not in progress.completed:
                screen.app.record_answer(number, "done", completed=True)
            before = step_goal.completable and number in progress.completed
            state = "done" if done or before else "open"
            note = step_goal.note() or ("done before" if before else "")
            screen.query_one(GoalBar).show(words(step_goal.ask), state, words(note))
        screen.reveal.update()

    def set_hints(self, keep_shown: bool = False) -> None:
        """The hints of the step on show; `keep_shown`: those already shown stay shown."""
        screen = self.screen
        # A drill question's own hints (with its numbers) come before the step's general ones.
        hints = screen.query_one(ActivityPanel).hints + tuple(screen.step.hints)
        screen.query_one(HintBox).set_hints(tuple(screen.app.words(h) for h in hints), keep_shown)

    def next_hint(self) -> None:
        """`h`: the next hint, in sight (the lesson comes back if zoomed out of view); after the
        last, the key that shows the answer, if the activity has one."""
        screen = self.screen
        if not screen.query_one(HintBox).reveal_next():
            words = "This step has no hints." if not screen.step.hints else "No more hints for this step."
            show_me = screen.query_one(ActivityPanel).give_up_label
            if show_me:  # after the hints, the key that shows it
                words += f" {keys.display(keys.BY_ID['answer.give_up'].keys, screen.settings.ascii_only)}: {show_me}."
            screen.say(words)
            return
        if screen.zoomed:
            screen.unzoom()
        # Once laid out, bring the new hint into sight wherever the text was scrolled to.
        screen.call_after_refresh(self.show_hint)

    def show_hint(self) -> None:
        screen = self.screen
        screen.query_one("#lesson-pane", Pane).scroll_to_widget(screen.query_one(HintBox), animate=False)
