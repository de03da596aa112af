"""Before and after on the tutorial screen: the views the simulation pane can show, which of
them a step shows when two runs are read side by side, and the "before" they are read against.

Three things put a second run beside the step's own: the step's `[compare]` run (on the same
arrivals), the step's start setting run beside a prediction's (`start_beside`), and a run pinned
with `b` (`pin`). Each shows as the two-column table (`widgets/compare.py`), titled with the dials
that differ between "before" and "now".
"""

from __future__ import annotations

from sim.errors import SimError

from ..formatting import number
from ..widgets.compare import CompareView
from ..widgets.curve import CurveView
from ..widgets.experts_drafts import ExpertsDraftsView
from ..widgets.gauges import GaugesView
from ..widgets.iteration import IterationView
from ..widgets.kv_cache import KVCacheView
from ..widgets.metrics import MetricsView
from ..widgets.seats import SeatsView
from ..widgets.server_view import ServerView
from ..widgets.sparklines import SparklinesView
from ..widgets.view_stack import ViewKind


def _beside(make):
    """A view of the run beside the step's own (the comparison run)."""
    def made(**kwargs):
        view = make(**kwargs)
        view.source = "compare"
        return view
    return made


VIEW_KINDS = (
    ViewKind("seats", SeatsView), ViewKind("compare_seats", _beside(SeatsView)), ViewKind("kv", KVCacheView),
    ViewKind("iteration", IterationView), ViewKind("experts_drafts", ExpertsDraftsView),
    ViewKind("gauges", GaugesView), ViewKind("metrics", MetricsView),
    ViewKind("compare", CompareView), ViewKind("sparklines", SparklinesView), ViewKind("curve", CurveView),
    ViewKind("server", ServerView),
)
"""Every view the simulation pane can show. A step names those it shows in its `views` list;
"compare" (two runs' metrics in two columns) and "compare_seats" are added for a step with a
run beside its own."""

MODEL_KIND_WORDS = {"encoder": "embedder", "decoder": "chat LLM"}


class BeforeAfter:
    """The tutorial screen's "before": a pinned run or the step's start run beside, and the views
    that show it. Reads and drives the screen through its public members."""

    def __init__(self, screen) -> None:
        self.screen = screen
        self.pinned = None
        """(snapshot, scenario) pinned with `b` as "before"; None when nothing is pinned."""
        self.beside_start = None
        """The step's starting scenario, run beside a prediction's setting as "before"."""

    @property
    def active(self) -> bool:
        """A "before" (pinned or run beside) is on show."""
        return self.pinned is not None or self.beside_start is not None

    def forget(self) -> None:
        """A new step, or the step's start again: nothing pinned, nothing beside."""
        self.pinned = self.beside_start = None

    def pins(self, step) -> bool:
        """`b` works on this step: it runs no setting beside its own."""
        return step.compare is None and self.beside_start is None

    def view_names(self, step) -> list[str]:
        """The views in the order the lesson lists them. A run beside the step's own shows as its
        seats under the step's and the metrics of both in two columns; a "before" (the start
        setting beside a prediction's, or a pinned run) as the metrics in two columns."""
        compare = step.compare is not None
        two_runs = compare or self.active
        names = []
        for name in step.views:
            names.append("compare" if two_runs and name == "metrics" else name)
            if compare and name == "seats":
                names.append("compare_seats")
        if two_runs and "compare" not in names:
            names.append("compare")
        live = getattr(self.screen, "live", None)
        if live is not None and live.shows(step):  # a real server beside: its view first
            names.insert(0, "server")
        return names

    def arrange(self, step) -> None:
        """The step's views, captioned and titled for its runs, the curve waiting for its sweep."""
        screen = self.screen
        stack = screen.stack
        for view in stack.views("seats", make=False):
            view.caption = None
        if step.compare is not None:
            main, beside = step.scenario, step.compare.scenario
            headers, title = compare_headers(main, beside, step.compare.label)
            for view in stack.views("compare"):
                view.configure("main", "compare", headers, screen.app.words(title))
            for view in stack.views("seats"):
                view.caption = headers[0] if title == "" else None
            for view in stack.views("compare_seats"):
                view.caption = headers[1] if title == "" else "beside"
        self.configure()
        pending = "curve" in step.views and step.sweep is not None
        for view in stack.views("curve", make="curve" in step.views):
            view.update_curves((), pending=pending)
        stack.show(self.view_names(step))

    def configure(self) -> None:
        """The two-column table of a "before" and the live "now", titled with what changed."""
        if self.beside_start is not None:
            source, before = "compare", self.beside_start
        elif self.pinned is not None:
            source, before = "pinned", self.pinned[1]
        else:
            return
        screen = self.screen
        sim = screen.sim
        now = sim.scenario if sim is not None else screen.step.scenario
        changed = setting_changes(screen.step.dials, before, now)
        if changed:
            title = "; ".join(changed)
        elif self.pinned is not None:
            title = f"before: pinned at t {self.pinned[0].time:.1f} s"
        else:
            title = ""
        for view in screen.stack.views("compare"):
            view.configure(source, "main", ("before", "now"), screen.app.words(title))

    def show_again(self) -> None:
        """The views after a "before" came or went; the page with the table in sight."""
        self.configure()
        stack = self.screen.stack
        names = self.view_names(self.screen.step)
        stack.show(names, keep_frames=True, page_of="compare" if "compare" in names else None)
        stack.update_frame(self.frames())

    def frames(self) -> dict:
        """The snapshots the views draw now: the live run's and a pinned one."""
        frames = {}
        sim = self.screen.sim
        if sim is not None:
            frames["main"] = sim.snapshot()
        if self.pinned is not None:
            frames["pinned"] = self.pinned[0]
        return frames

    def start_beside(self, dials: dict) -> None:
        """A prediction about a setting: the step's start runs beside it on the same arrivals,
        keeping `dials` its own (the run has not started, so nothing is lost)."""
        screen = self.screen
        start = screen.step.scenario
        try:
            sim = screen.new_run(start, compare=start, compare_keeps=tuple(dials))
        except SimError:
            return
        screen.adopt_simulation(sim)
        self.beside_start = start
        self.pinned = None
        self.show_again()

    def pin(self) -> None:
        """`b`: pin the run's metrics now as "before", beside the live "now"; again, unpin."""
        screen = self.screen
        if screen.sim is None:
            return
        if not self.pins(screen.step):
            screen.say("This step already runs a setting beside this one.")
            return
        if self.pinned is not None:
            self.pinned = None
            screen.say("Unpinned.")
        else:
            self.pinned = (screen.sim.snapshot(), screen.sim.scenario)
            screen.say("Pinned as before: move a dial and compare.")
        self.show_again()
        screen.update_keys()


def compare_headers(main, beside, label: str) -> tuple[tuple[str, str], str]:
    """Column headers for two runs in the words of what differs between them: the batching
    policy, the kind of model, or the seats; else generic ones and the comparison's label as a
    title line."""
    a, b = main.engine_config(), beside.engine_config()
    if a.batching != b.batching:
        return (a.batching, b.batching), ""
    kinds = main.deployment().model.kind, beside.deployment().model.kind
    if kinds[0] != kinds[1]:
        return (MODEL_KIND_WORDS.get(kinds[0], kinds[0]), MODEL_KIND_WORDS.get(kinds[1], kinds[1])), ""
    if a.max_num_seqs != b.max_num_seqs and a.batching == "continuous":
        return (f"{a.max_num_seqs:,} seats", f"{b.max_num_seqs:,} seats"), ""
    return ("here", "beside"), f"beside: {label}"


def setting_changes(dials, before, now) -> list[str]:
    """The step's dials that differ between two scenarios, in their own words: "Seats 256 → 32"."""
    changes = []
    for dial in dials:
        old, new = dial.value(before), dial.value(now)
        if old != new:
            changes.append(f"{dial.label} {number(old)} → {number(new)}")
    return changes
