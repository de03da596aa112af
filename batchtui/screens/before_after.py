"""Before and after on the tutorial screen: the views the simulation pane can show, which of
them a step shows when two runs are read side by side, and the "before" they are read against.

Three things put a second run beside the step's own: the step's `[compare]` run (on the same
arrivals), the step's start setting run beside a prediction's (`beside`), and a run pinned
with `b` (`pin`). Each shows as the two-column table (`widgets/compare.py`), titled with the dials
that differ between "before" and "now".
"""

from __future__ import annotations

from collections.abc import Callable

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
from ..widgets.view_stack import ViewKind, ViewStack


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


class BeforeAfter:
    """The tutorial's "before": a pinned run or the step's start run beside, and the views of
    `stack` that show it. Given the step and the live run (`LiveSimulation`) on each call."""

    def __init__(self, stack: ViewStack, words: Callable[[str], str],
                 server_beside: Callable[[object], bool] = lambda step: False) -> None:
        self.stack = stack
        self.words = words
        """The app's words (plain ASCII under `--ascii`)."""
        self.server_beside = server_beside
        """Whether a real server runs beside the step (`live_server.py`): its view comes first."""
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
        if self.server_beside(step):  # a real server beside: its view first
            names.insert(0, "server")
        return names

    def arrange(self, step, run) -> None:
        """The step's views, captioned and titled for its runs, the curve waiting for its sweep."""
        stack = self.stack
        for view in stack.views("seats", make=False):
            view.caption = None
        self.configure(step, run)
        pending = "curve" in step.views and step.sweep is not None
        for view in stack.views("curve", make="curve" in step.views):
            view.update_curves((), pending=pending)
        stack.show(self.view_names(step))

    def name_runs(self, step, run) -> None:
        """A step's run and the run beside it, named in the table's columns and the seat panes'
        captions by what differs between them as the dials stand now (step 17's seats dial
        moved to 640 left them saying "512 seats")."""
        if step.compare is None:
            return
        headers, title = compare_headers(run.scenario if run is not None else step.scenario, step.compare)
        for view in self.stack.views("compare"):
            view.configure("main", "compare", headers, self.words(title))
        for view in self.stack.views("seats"):
            view.caption = headers[0] if title == "" else None
        for view in self.stack.views("compare_seats"):
            view.caption = headers[1] if title == "" else "beside"

    def configure(self, step, run) -> None:
        """The two-column table of a "before" and the live "now", titled with what changed; or
        the step's two runs, named (`name_runs`)."""
        self.name_runs(step, run)
        if self.beside_start is not None:
            source, before = "compare", self.beside_start
        elif self.pinned is not None:
            source, before = "pinned", self.pinned[1]
        else:
            return
        now = run.scenario if run is not None else step.scenario
        changed = setting_changes(step.dials, before, now)
        if changed:
            title = "; ".join(changed)
        elif self.pinned is not None:
            title = f"before: pinned at t {self.pinned[0].time:.1f} s"
        else:
            title = ""
        for view in self.stack.views("compare"):
            view.configure(source, "main", ("before", "now"), self.words(title))

    def show_again(self, step, run, page_of: str = "compare") -> None:
        """The views after a "before" (or a real server, `page_of="server"`) came or went; the
        page with its view in sight, if it is on show."""
        self.configure(step, run)
        names = self.view_names(step)
        self.stack.show(names, keep_frames=True, page_of=page_of if page_of in names else None)
        self.stack.update_frame(self.frames(run))

    def frames(self, run) -> dict:
        """The snapshots the views draw now: the live run's and a pinned one."""
        frames = {}
        if run is not None:
            frames["main"] = run.snapshot()
        if self.pinned is not None:
            frames["pinned"] = self.pinned[0]
        return frames

    def beside(self, start) -> None:
        """The step's start `start` now runs beside a prediction's setting, as "before"."""
        self.beside_start = start
        self.pinned = None

    def pin(self, step, run) -> str:
        """`b`: pin the run's metrics now as "before", beside the live "now"; again, unpin.
        Returns what to say."""
        if not self.pins(step):
            return "This step already runs a setting beside this one."
        if self.pinned is not None:
            self.pinned = None
            said = "Unpinned."
        else:
            self.pinned = (run.snapshot(), run.scenario)
            said = "Pinned as before: move a dial and compare."
        self.show_again(step, run)
        return said


def hold_back_curves(stack: ViewStack, step, answered: bool) -> None:
    """The curve plots that answer a prediction (step 7's batch curve, the activity's `hides`)
    wait for its answer."""
    hidden = step.activity.params.get("hides", ()) if not answered else ()
    curves = stack.views("curve", make="curve" in step.views)
    held = [curve.held_back for curve in curves]
    for curve in curves:
        curve.hold_back(hidden)
    if held != [curve.held_back for curve in curves]:
        stack.check_sizes()  # a plot shown (or held) takes more (or fewer) lines


def compare_headers(main, comparison) -> tuple[tuple[str, str], str]:
    """Column headers for two runs in the words of what differs between them
    (`steps.model.Comparison.names`: the batching policy, the kind of model, or the seats); else
    generic ones and the comparison's label as a title line."""
    names = comparison.names(main)
    if names is not None:
        return names[1], ""
    return ("here", "beside"), f"beside: {comparison.label}"


def setting_changes(dials, before, now) -> list[str]:
    """The step's dials that differ between two scenarios, in their own words: "Seats 256 → 32"."""
    changes = []
    for dial in dials:
        old, new = dial.value(before), dial.value(now)
        if old != new:
            changes.append(f"{dial.label} {number(old)} → {number(new)}")
    return changes
