"""A break-it challenge: a goal on the live metrics, reached by pushing a dial."""

from __future__ import annotations

from functools import partial

from textual.app import ComposeResult
from textual.widgets import Static

from ...formatting import latency, percent
from .base import ActivityView, Goal


class BreakItView(ActivityView):
    """Shows the goal; every frame asks the challenge whether it has been reached, and once it
    has, explains what happened with the numbers seen. ctrl+d ("show me") sets the dials that
    break it, on a fresh run, and the learner watches it break."""

    def __init__(self, challenge, done_before: bool = False) -> None:
        super().__init__(id="break-it")
        self.challenge = challenge
        self.done_before = done_before
        self.verdict = None
        self.showing = False
        """A "show me" is being worked out."""
        self.snapshot = None
        """The last frame seen: the goal line says how far the run is from breaking."""

    def compose(self) -> ComposeResult:
        yield Static("Break it", classes="activity-title", markup=False)
        yield self.markdown(self.words(self.challenge.goal_md), id="break-it-goal")
        note = "You broke it before; do it again?" if self.done_before else "Watching the live metrics..."
        yield Static(self.words(note), id="break-it-status", classes="activity-feedback -after-text -info", markup=False)

    def update_snapshot(self, snapshot, compare=None) -> None:
        self.snapshot = snapshot
        if self.verdict is not None:
            return
        verdict = self.challenge.check(snapshot)
        if verdict is None:
            return
        self.verdict = verdict
        status = self.query_one("#break-it-status", Static)
        status.update(self.words(verdict.title))
        status.set_class(False, "-info")
        status.set_class(True, "-correct")
        self.run_worker(partial(self._show_verdict, verdict.message_md), group="verdict")
        self.post_message(self.Finished(verdict.title))

    @property
    def give_up_label(self) -> str:
        return "show me" if self.verdict is None else ""

    async def give_up(self) -> None:
        if self.verdict is not None or self.showing:
            return
        self.showing = True
        self._status("Working out settings that break it...")
        await self.prepare(self._breaking, self._show_me)

    def _breaking(self):
        try:
            return self.challenge.show_me()
        except ValueError as exc:
            return exc

    async def _show_me(self, show) -> None:
        self.showing = False
        if self.verdict is not None:
            return
        if isinstance(show, ValueError):
            self._status(f"No setting of this step's dials breaks it: {show}.")
            return
        self.challenge.reset()  # the run starts afresh: nothing seen before counts
        self._status("Showing you: watching the live metrics...")
        self.post_message(self.RunDials(show.dials, fresh=True, words=show.words, from_start=True))

    def _status(self, text: str) -> None:
        self.query_one("#break-it-status", Static).update(self.words(text))

    async def _show_verdict(self, text: str) -> None:
        if not self.is_attached:
            return
        await self.show_markdown("break-it-verdict", text)
        # The learner is watching the dials and views: bring what happened into the lesson pane
        # (unless a step change removed the view meanwhile).
        for status in self.query("#break-it-status"):
            self.bring_into_view(status, top=True)

    @property
    def answered(self) -> bool:
        return self.verdict is not None

    def goal(self) -> Goal:
        short = SHORT_GOALS.get(getattr(self.challenge, "name", ""))
        ask = short[0](self.challenge) if short else "Break it: " + self.challenge.goal_md.replace("**", "")
        if self.verdict is not None:
            return Goal(ask, "done", "broken")
        if short and self.snapshot is not None:
            return Goal(ask, "open", short[1](self.snapshot), (), tuple(say(self.snapshot) for say in short[2:]))
        return Goal(ask, "open", "done before" if self.done_before else "")


def _ratio(s) -> str:
    m = s.metrics
    return f"now {m.itl_max / m.tpot_p50:.0f}x" if m.tpot_p50 > 0 else "now -"


SHORT_GOALS = {
    # challenge name -> (the goal in a line, how far the live run is)
    "static_peak": (lambda c: f"Break it: TTFT p99 past {c.goal:g} s with static batches",
                    lambda s: f"now {latency(s, s.metrics.ttft_p99)}"),
    "past_knee": (lambda c: f"Break it: TTFT p99 past {c.goal:g} s, {c.min_queue}+ waiting",
                  lambda s: f"now {latency(s, s.metrics.ttft_p99)}, {s.queue_len:,} waiting",
                  lambda s: f"now {latency(s, s.metrics.ttft_p99)}, {s.queue_len:,}"),
    "long_prompt_stall": (lambda c: f"Break it: a token gap over {c.ratio:g}x TPOT p50", _ratio),
    "cache_cap": (lambda c: "Break it: a preemption with seats still free",
                  lambda s: f"KV {percent(s.kv_blocks_used / max(1, s.kv_blocks_usable))} full"),
}
"""The challenges this app knows, said in a line (the lesson pane has each goal in full): (the
goal, how far the live run is, and shorter forms of that for a narrow line)."""
