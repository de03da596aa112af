"""What a mixture of experts and speculative decoding did in the last iteration: the routed
experts it read in each MoE layer (of how many), and the draft tokens its verification accepted."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from .sim_view import SimView


def experts_words(report) -> str:
    """The experts line: routed experts read a layer (uniform routing's expectation, as the cost
    model prices it) of how many there are; a dense model's weights are read whole."""
    cost = report.cost
    if not cost.experts:
        return "dense: every weight read each iteration"
    read = cost.experts_read
    shown = f"{read:.0f}" if read >= 9.95 else f"{read:.1f}"
    return f"experts read {shown} of {cost.experts} a layer"


def drafts_words(report, snapshot, sep: str = " · ") -> list[str]:
    """The speculative decoding line, longest wording first: draft tokens accepted this iteration
    of those verified, then the run's mean acceptance length (vLLM's: 1 + accepted / drafts)."""
    if not snapshot.spec_method:
        return ["no speculative decoding (l: pick one)", "no speculative decoding"]
    from sim.speculative import METHOD_NAMES  # (once a run drafts: not before the first frame)

    method = METHOD_NAMES.get(snapshot.spec_method, snapshot.spec_method)
    this = f"accepted {report.spec_accepted} of {report.spec_draft_tokens} drafts"
    if not snapshot.spec_drafts:
        return [f"{this}{'' if report.spec_draft_tokens else ' yet'}", this]
    mean = 1.0 + snapshot.spec_accepted / snapshot.spec_drafts
    return [f"{this}{sep}{method}, mean length {mean:.2f}", f"{this}{sep}mean length {mean:.2f}",
            f"{this}{sep}mean {mean:.2f}", this]


class ExpertsDraftsView(SimView):
    """Two lines on the last iteration: experts read (a mixture of experts reads the experts its
    batch's tokens route to: top-k for one token, nearly all of them for a large batch), and
    the drafts its verification accepted (tokens beyond one a request) with the run's mean."""

    view_name = "experts_drafts"
    DEFAULT_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")
    COMPONENT_CLASSES = {"experts-drafts--dim", "experts-drafts--figure"}
    LINES = 2

    def build(self, width: int) -> Text:
        snap = self.snapshot
        report = snap.last if snap is not None else None
        if report is None:
            return Text("experts and drafts: no iteration yet\n", self.style_of("experts-drafts--dim"))
        text = Text()
        figure = self.style_of("experts-drafts--figure")
        text.append(experts_words(report), figure if report.cost.experts else self.style_of("experts-drafts--dim"))
        text.append("\n")
        lines = drafts_words(report, snap, self.glyphs.sep)
        line = next((words for words in lines if len(words) <= width), lines[-1])
        text.append(line, figure if snap.spec_method else self.style_of("experts-drafts--dim"))
        return text
