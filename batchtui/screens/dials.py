"""The step's dials on the tutorial screen: the dial list's shape (one column, or two when the
simulation is wide), its help line (in the status line on a short terminal), a dial moved by
the learner, and dials set for them (an activity's run, the playground's `m`).

`Dials` drives the screen through its public members; the screen's handlers delegate to it.
"""

from __future__ import annotations

from sim.errors import SimError

from ..formatting import in_app_words, number
from ..widgets.activity_panel import ActivityPanel
from ..widgets.dial import DialControl
from ..widgets.dial_list import DialList
from ..widgets.sim_status import SimStatus

DIAL_ROWS = 6
"""Dial lines in sight at most (in one column); a longer list scrolls as focus moves."""
DIAL_ROWS_ZOOMED = 4
"""In two columns, zoomed: the views need the height more."""


class Dials:
    """The dial list of one tutorial screen and the settings moved through it."""

    def __init__(self, screen) -> None:
        self.screen = screen

    @property
    def controls(self) -> list[DialControl]:
        return list(self.screen.query(DialControl))

    def shape(self, count: int) -> tuple[int, int]:
        """Columns and lines in sight for `count` dials: two columns on a wide pane."""
        screen = self.screen
        wide = screen.zoomed or screen.has_class("-wide")
        if wide and count > DIAL_ROWS_ZOOMED:
            return 2, DIAL_ROWS_ZOOMED
        return 1, DIAL_ROWS

    async def mount(self, step) -> None:
        """The step's dials at the values its scenario starts with."""
        dials = [(spec, spec.value(step.scenario)) for spec in step.dials]
        columns, rows = self.shape(len(dials))
        await self.screen.query_one(DialList).set_dials(dials, rows, columns)

    async def mount_again(self) -> None:
        """The dial list in the shape the new width wants, keeping their values and focus."""
        dials = self.screen.query_one(DialList)
        columns, rows = self.shape(len(dials.dials))
        await dials.set_dials([(d.spec, d.value) for d in dials.dials], rows, columns)

    def reshape(self) -> None:
        """After a resize: mount the list again if it wants the other shape."""
        screen = self.screen
        dials = screen.query_one(DialList)
        rows = screen.query_one("#dial-rows")
        columns, _ = self.shape(len(dials.dials))
        if rows.has_class("-grid") != (columns > 1):
            screen.run_worker(self.mount_again, group="dials")

    def set_hint(self) -> None:
        """What the help line says while no dial has focus: how to reach the dials."""
        screen = self.screen
        has_input = screen.query_one(ActivityPanel).has_input
        hint = "tab: answer box, then dials" if has_input else "tab: the dials (← → turn them)"
        screen.query_one(DialList).set_rest_hint(hint)

    def place_help(self) -> None:
        """On a short terminal the help line under the dials is hidden (tutorial.tcss): a
        focused dial's help shows in the status line instead."""
        screen = self.screen
        help_line = screen.query_one("#dial-help")
        focused = help_line.has_class("-focused") and screen.has_class("-short")
        screen.query_one(SimStatus).show_help(help_line.forms if focused else None)

    def show_values(self, scenario) -> None:
        """Every dial at its value in `scenario`."""
        for dial in self.controls:
            dial.set_value(dial.spec.value(scenario))

    def changed(self, dial: DialControl, value) -> None:
        """The learner moved `dial` to `value`: checked by the lesson's range, then by the run."""
        screen = self.screen
        try:
            value = dial.spec.check(value)
        except ValueError as exc:
            screen.say(f"Refused: {in_app_words(exc)}", error=True)
            return
        if screen.sim is None:
            return
        try:
            screen.sim.set_dial(dial.spec.name, value)
        except SimError as exc:
            screen.say(f"Refused: {in_app_words(exc)}", error=True)
            return
        dial.set_value(value)
        screen.clear_notice()
        screen.dials_moved({dial.spec.name: value})

    def set(self, settings: dict) -> tuple[dict, SimError | None]:
        """Set dials (`sim.dials` paths) on the live run in order, and the step's dial controls
        to the values set; stops at the first one refused. Returns those set and the error."""
        applied = {}
        error = None
        for path, value in settings.items():
            try:
                self.screen.sim.set_dial(path, value)
            except SimError as exc:
                error = exc
                break
            applied[path] = value
        for dial in self.controls:
            if dial.spec.name in applied:
                dial.set_value(applied[dial.spec.name])
        return applied, error

    def run(self, message) -> None:
        """Run the traffic an activity asks for (`ActivityView.RunDials`: a drill's own numbers,
        a prediction's run, a break-it's "show me")."""
        screen = self.screen
        if screen.sim is None:
            return
        step = screen.step
        if message.beside_start and message.dials and step.compare is None and not screen.sim.started:
            # A prediction about a setting: run it with the step's start setting beside it, on
            # the same arrivals, so "before" and "now" read side by side (step 13: uncapped
            # against capped). The run has not started yet, so nothing is lost.
            screen.before.start_beside(message.dials)
        settings, back = dict(message.dials), []
        if message.from_start:
            # The step's other dials go back to where it began, first: the settings asked for
            # break it from there.
            for control in self.controls:
                start = control.spec.value(step.scenario)
                if control.spec.name not in settings and control.value != start:
                    back.append(control.spec.label)
                    settings = {control.spec.name: start, **settings}
        _, error = self.set(settings)
        if error is not None:
            screen.say(f"Refused: {in_app_words(error)}", error=True)
        if message.fresh and screen.sim.started:
            # From time zero with these settings: a mean over the run is this run's alone.
            scenario = screen.sim.scenario
            screen.stop_simulation()
            screen.start_simulation(scenario)
            if screen.sim is None:
                return
        screen.before.configure()
        if message.words:
            screen.say(message.words + (f" {', '.join(back)} back to the step's start." if back else ""))
        elif message.dials:
            screen.say(f"Running with {', '.join(self.words(message.dials))}.")
        screen.sim.resume()
        screen.update_status()
        screen.update_goal()
        screen.update_keys()

    def words(self, settings: dict) -> list[str]:
        """Settings in the dials' own words where the step has that dial (a drill may also set
        the GPU and model of its question)."""
        controls = {d.spec.name: d.spec for d in self.controls}
        said = []
        for path, value in settings.items():
            spec = controls.get(path)
            if spec is None:
                said.append(f"{path.rsplit('.', 1)[-1].replace('_', ' ')} {number(value)}")
            else:
                said.append(f"{spec.label} {number(value)}" + (f" {spec.unit}" if spec.unit else ""))
        return said
