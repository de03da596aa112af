"""The playground's keys on the tutorial screen (step 20): `w` saves the scenario, `o` opens one,
`m` loads the multi-turn helpdesk's traffic (again: back to single turns), `l` picks a model on
the GPUs it needs and speculative decoding (`model_picker.py`).

`Playground` holds what they remember (the file last saved or opened, the traffic `m` replaced)
and tells the screen what each key did (`Played`); the keys run its methods (`keys.py` names them).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from sim.errors import SimError

from ..formatting import in_app_words, number
from .before_after import setting_changes

PLAYGROUND_ACTIONS = ("save_scenario", "load_scenario", "helpdesk_traffic", "pick_model", "live")
"""The screen's actions that only the playground takes."""


class Played(NamedTuple):
    """What a playground key did, for the screen to show: a line to say, and the run started
    again on a scenario opened, the dials it moved, the key a step's goal may wait for."""

    words: str
    error: bool = False
    restart: object = None
    """A scenario to run in place of the live one (a file opened)."""
    moved: dict | None = None
    """Dials set on the live run (`m`), path -> value."""
    key: str | None = None


class Playground:
    """The playground's files and traffic switch. `step_run` is the step's `StepRun` (the step on
    show, its run, its dials); `done(Played)` shows what a key did (the screen's)."""

    def __init__(self, app, step_run, done: Callable[[Played], None]) -> None:
        self.app = app
        self.step_run = step_run
        self.done = done
        self.scenario_file: Path | None = None
        """The playground's file last saved or opened (the prompts suggest it)."""
        self.left_traffic = None
        """The playground's scenario as `m` found it when it loaded the multi-turn helpdesk
        (`m` again goes back to its traffic); None once a step, reset or file replaces it."""

    @staticmethod
    def takes(action: str) -> bool:
        return action in PLAYGROUND_ACTIONS

    def live_run(self):
        """The live run while the step on show is the playground, else None."""
        return self.step_run.sim if self.on(self.step_run.step()) else None

    @staticmethod
    def on(step) -> bool:
        """The step on show is the playground."""
        return step.activity.kind == "playground"

    def save(self) -> None:
        """`w`: the file prompt, then the scenario written to the file chosen."""
        from ..scenario_files import save_scenario_file
        from .file_prompt import FilePromptScreen

        def chosen(path) -> None:
            run = self.live_run()  # (none if the step changed meanwhile)
            if path is not None and run is not None:
                self.scenario_file = path
                self.done(Played(save_scenario_file(run.scenario, path), key="save_scenario"))

        if self.live_run() is not None:
            self.app.push_screen(FilePromptScreen("Save this scenario as", self.suggested_file(), saving=True,
                                                  own_file=self.scenario_file, within=self.files_within()),
                                 chosen)

    def load(self) -> None:
        """`o`: the file prompt, then the scenario read from the file chosen runs on the dials."""
        from ..scenario_files import Unusable, read_scenario
        from .file_prompt import FilePromptScreen

        def chosen(path) -> None:
            if path is None or self.live_run() is None:
                return  # cancelled, or the step changed meanwhile
            self.scenario_file = path
            try:
                scenario = read_scenario(path)
            except Unusable as exc:  # (the file by its name: the prompt above showed where)
                self.done(Played(f"Kept the current scenario: {str(exc).replace(str(path), path.name)}", error=True))
                return
            self.left_traffic = None
            self.done(Played(f"Loaded the scenario from {path}.", restart=scenario, key="load_scenario"))

        if self.live_run() is not None:
            self.app.push_screen(FilePromptScreen("Open a scenario file", self.suggested_file(), saving=False,
                                                  within=self.files_within()), chosen)

    def helpdesk_traffic(self) -> None:
        """`m`: the multi-turn helpdesk's traffic set on the dials (hardware, model and engine
        dials stay as they are); again: back to single turns."""
        from steps.activities import helpdesk_switch

        run, step, dials = self.live_run(), self.step_run.step(), self.step_run.dials()
        if run is None:
            return
        current = run.scenario
        try:
            switch = helpdesk_switch(step, current, self.left_traffic)
        except SimError as exc:
            self.done(Played(f"Kept the traffic as it is: {in_app_words(exc)}", error=True))
            return
        applied, error = dials.set(switch.settings)
        if error is not None:
            words, refused = f"Refused: {in_app_words(error)}", True
        else:
            self.left_traffic = current if switch.multi_turn else None
            words, refused = switch_words(switch, step.dials, current, run.scenario), False
        self.done(Played(words, refused, moved=applied or None))

    def pick_model(self) -> None:
        """`l`: the model picker over the live run's scenario; its choice runs from time zero,
        or, refused, is said in one line and the run keeps its model."""
        from .model_picker import ModelPickerScreen

        run, step = self.live_run(), self.step_run.step()
        if run is None:
            return
        gpu_dial = next((dial for dial in step.dials if dial.name == "gpu"), None)
        gpus = tuple(gpu_dial.choices) if gpu_dial is not None else (run.scenario.gpu,)
        self.app.push_screen(ModelPickerScreen(run.scenario, gpus), self.run_picked)

    def run_picked(self, picked) -> None:
        """The picker's choice (None: kept), checked as a whole before the run restarts on it."""
        from sim.profiles import TENSOR_PARALLEL_SIZES
        from sim.search import cannot_run
        from sim.speculative import METHOD_NAMES, method_offered, picked_config

        run = self.live_run()  # (none if the step changed meanwhile)
        if picked is None or run is None:
            return
        current = run.scenario
        profiles = current.profiles()
        kept = f"Kept {profiles.model(current.model).name}"
        model, gpu = profiles.model(picked.model_id), profiles.gpu(picked.gpu)
        if picked.gpus is None:
            self.done(Played(f"{kept}: {model.name} does not fit on {TENSOR_PARALLEL_SIZES[-1]} × {gpu.name}.",
                               error=True))
            return
        cannot = method_offered(picked.method, model) if picked.method != "none" else None
        if cannot is not None:
            self.done(Played(f"{kept}: {cannot.split(' (')[0]}.", error=True))
            return
        try:
            spec = picked_config(picked.method, model, picked.k)
            new = current.replace(gpu=picked.gpu, model=picked.model_id, tensor_parallel_size=picked.gpus,
                                  speculative_config=spec)
            why = cannot_run(new, profiles, in_app_words)
        except SimError as exc:
            why = in_app_words(exc)
        if why is not None:
            self.done(Played(f"{kept}: {why}", error=True))
            return
        drafts = f"{METHOD_NAMES[picked.method]}, K = {picked.k}" if spec else "no speculative decoding"
        self.done(Played(f"{model.name} on {picked.gpus} × {gpu.name}, {drafts}.", restart=new,
                         moved={"gpu": picked.gpu, "model": picked.model_id, "tensor_parallel_size": picked.gpus,
                                "speculative_config": spec}))

    def files_within(self) -> Path | None:
        """Served in a web page, the file prompts stay in the state folder."""
        return self.app.store.directory if self.app.settings.served else None

    def suggested_file(self) -> Path:
        return self.scenario_file or self.app.settings.scenario_path or self.app.store.directory / "playground.toml"


def switch_words(switch, step_dials, before, now) -> str:
    """The notice for `m`: what it loaded and every setting it changed, in the dials' words
    (a setting the step has no dial for in the simulator's); a word if prefix caching is off."""
    from sim import dials as sim_dials

    on_dials = {dial.name for dial in step_dials}
    changes = setting_changes(step_dials, before, now)
    changes += [f"{sim_dials.find(path).label} {number(sim_dials.get_value(before, path))} → {number(value)}"
                for path, value in switch.settings.items() if path not in on_dials]
    words = f"{switch.name}: {'; '.join(changes)}." if changes else f"Already {switch.name}."
    if switch.multi_turn and not sim_dials.get_value(now, "engine.enable_prefix_caching"):
        words += " Prefix caching is off: each turn computes its whole history again."
    return words[0].upper() + words[1:]
