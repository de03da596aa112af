"""The playground beside a real server (`s`, `batchtui --server URL`), and `f`: calibrate to what
was measured.

`LiveServer` is given the playground (its live run) and the step's run through it (`StepRun`:
the run, its views, starting it again at a speed) and the screen's callbacks for what only the
screen does: show the views again, open the playground again on a fitted GPU. It asks for the
server's address in the file prompts' style
(`ServerPromptScreen`), opens a `batchtui.loadgen.live.LiveSession` in a worker, starts the
simulation again at the server's pace (its time scale: 1 for a vLLM) and sends the same traffic
to the server from the same moment, so the simulated engine and the server serve the same
requests side by side. Every half
second of the server's time the `Measured` figures go down to the views as the frame source
"server" (`widgets/server_view.py`, shown first while connected). When the simulation starts over
(a dial that restarts it, `r`, a file opened, a calibration) or its traffic changes, the server's
traffic starts over with it. A server that goes away ends the session with one line; the playground
goes on simulating. Leaving the playground disconnects.

`f` writes the session's measured segments as vLLM result files into the state folder (each
atomically), runs `batchtui calibrate` on them in a process of its own (in a worker: the app goes
on; the process is killed if the app or the worker ends first), and reopens the playground on the
fitted GPU profile, saying which parameters moved.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Static

from ..widgets.answer_box import AnswerBox
from .file_prompt import FilePromptScreen
from .playground import Playground

DEFAULT_URL = "http://127.0.0.1:8000"
"""The prompt's first suggestion: `vllm serve`'s default port on this machine."""
CALIBRATED_FILE = "calibrated.toml"
CALIBRATE_LOG = "calibrate.txt"
CALIBRATE = (sys.executable, "-m", "batchtui", "calibrate")
"""The command `f` runs (its arguments follow)."""
MEASURED_FOLDER = "measured"
POLL_S = 0.1
"""How often a session between runs looks whether the run went on or started over (s)."""
FAILURE_WORDS = 150
"""The most of calibrate's refusal the notice line says (its terminal output says all of it)."""
MOVED_BY = 0.005
"""A parameter that moved less than this share is not said to have moved."""


class ServerPromptScreen(FilePromptScreen):
    """The server's address, in the file prompts' style: dismisses with the URL (checked by
    `loadgen.live.base_url`; a bad one is said on the status line and the prompt stays), or None."""

    def __init__(self, suggestion: str) -> None:
        super().__init__("Drive a server (vLLM, batchtui serve) with this traffic: its address",
                         Path(), saving=False)
        self.url_suggestion = suggestion

    def compose(self) -> ComposeResult:
        with Vertical(id="file-prompt-body"):
            yield Static(self.title_text, id="file-prompt-title", markup=False)
            yield AnswerBox(self.url_suggestion, id="file-prompt-input", select_on_focus=False)
            yield Static("Enter connects   ctrl+u clears   Esc (or Enter on empty) cancels   F1 help",
                         id="file-prompt-status", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        from ..loadgen.live import LiveError, base_url

        event.stop()
        event.prevent_default()  # (the file prompt's own handler is not for an address)
        text = event.value.strip()
        if not text:
            self.dismiss(None)
            return
        try:
            base_url(text)
        except LiveError as exc:
            self.query_one("#file-prompt-status", Static).update(self.app.words(str(exc)))
            return
        self.dismiss(text)


class LiveServer:
    """The playground's real server, for one tutorial screen; see the module's doc.

    `playground`: the screen's `Playground` (its live run; its `step_run`: the step's `StepRun`);
    `say(words, error=)`; `show_views(page_of)`: the step's views again (`BeforeAfter.show_again`),
    the page of `page_of` in sight; `reopen(gpu)`: the playground opened again on a fitted
    `LearnerGpu` (False: not on the playground any more);
    `worker(work, group=)`: runs `work` beside the screen (its `run_worker`)."""

    def __init__(self, app, playground: Playground, say: Callable[..., None], *,
                 show_views: Callable[[str | None], None],
                 reopen: Callable[[object], Awaitable[bool]], worker: Callable[..., object]) -> None:
        self.app = app
        self.playground = playground
        self.step_run = step_run = playground.step_run
        self.stack = step_run.stack
        self.say = say
        self.show_views = show_views
        self.reopen = reopen
        self.worker = worker
        self.ended = False
        """The screen is going (`end`): nothing is drawn or started any more."""
        self.session = None
        """The `LiveSession` while connected (or connecting)."""
        self.last_session = None
        """The session last connected (kept for `f` after it ended)."""
        self.url = ""
        """The address last typed (the prompt suggests it)."""
        self.measured = None
        self._stopping = False
        """The run going on is to end (the next starts both again)."""
        self._sim = None
        """The simulation the server's traffic runs beside."""
        self._time = 0.0
        self._workload = None
        self.calibrating = False
        self._proc = None
        """The calibration's process while it runs."""

    def on_playground(self) -> bool:
        return Playground.on(self.step_run.step())

    def run(self):
        """The live run while the playground is on show, else None."""
        return self.playground.live_run()

    @property
    def connected(self) -> bool:
        return self.session is not None

    def shows(self, step) -> bool:
        """The server's view is on show for `step` (the playground, while connected)."""
        return self.session is not None and Playground.on(step)

    # -- keys
    def act(self, key: str) -> None:
        """The `live` action: "server" (`s`) or "calibrate" (`f`)."""
        if key == "calibrate":
            self.calibrate()
        else:
            self.toggle()

    def toggle(self) -> None:
        """`s`: ask for an address and connect; connected: disconnect."""
        if self.session is not None:
            self.disconnect()
            return
        if self.run() is None:
            return

        def chosen(url) -> None:
            if url and self.on_playground() and self.session is None:
                self.connect(url)

        suggestion = self.url or self.app.settings.server_url or DEFAULT_URL
        self.app.push_screen(ServerPromptScreen(suggestion), chosen)

    def connect(self, url: str) -> None:
        """Drive the server at `url` with the playground's traffic (a bad URL: one line)."""
        from ..loadgen.live import LiveError, LiveSession

        try:
            session = LiveSession(url)
        except LiveError as exc:
            self.say(f"Not connected: {exc}.", error=True)
            return
        self.url = url
        self.session = self.last_session = session
        self.measured = None
        self.stack.frames.pop("server", None)  # (an earlier session's figures are not this one's)
        for view in self.stack.views("server"):
            view.measured = None
            view.status = f"server {session.where}: connecting..."
        self.show_views("server")
        self.say(f"Connecting to {session.where}...")
        self.worker(partial(self._drive, session), group="live-server", exclusive=True)

    def disconnect(self, words: str | None = None, error: bool = False) -> None:
        session, self.session = self.session, None
        if session is None:
            return
        self._stop_run(session)
        done = sum(seg.completed for seg in _answered(session))
        if words is None:
            words = (f"Disconnected from {session.where}: {done:,} answers measured"
                     + (f"; {self._key('playground.calibrate')} calibrates the simulator to them." if done else "."))
        self.say(words, error=error)
        self.show_views(None)

    # -- the session
    async def _drive(self, session) -> None:
        from ..loadgen.live import LiveError

        try:
            try:
                await session.open()
            except LiveError as exc:
                if self.session is session:
                    self.disconnect(f"Not connected: {exc}.", error=True)
                return
            if self.session is not session:
                return
            await self.step_run.begin_now()  # (`--server`: the playground's first run may be still to start)
            self.show_views("server")
            scale = session.time_scale
            pace = f" at its time scale {scale:g}" if scale != 1 else ""
            self.say(f"Driving {session.where} ({session.model}){pace} with the playground's traffic, the "
                     f"simulation beside it from the same moment; {self._key('playground.server')} disconnects.")
            while self._on(session):
                # Paused, the server waits too (a real GPU's clock cannot stop): both start again
                # from the start when the run goes on.
                while self._on(session) and not self.run().running:
                    await asyncio.sleep(POLL_S)
                if not self._on(session):
                    break
                # Both start together: a fresh run at the server's pace, and the same traffic.
                self.step_run.restart_with(self.run().scenario, scale)
                if (run := self.run()) is None:
                    break
                self._sim, self._time = run, 0.0
                scenario = run.scenario
                self._workload = (scenario.workload, scenario.seed)
                self._stopping = False
                await session.run(scenario, self._measured)
                if self.measured is not None and self.measured.gone and self.session is session:
                    self.disconnect(f"The server went away ({self.measured.gone}): the playground goes on "
                                    f"simulating; {self._key('playground.server')} connects again.", error=True)
                    break
                # A finite traffic served to its end: the next starts when the run starts over.
                while self._on(session) and not self._stopping:
                    self._check_run()
                    await asyncio.sleep(POLL_S)
        finally:
            await session.close()
            if self.session is session:  # (the playground left between two runs)
                if not self.gone:
                    self.disconnect()
                else:
                    self.session = None

    def _key(self, key_id: str) -> str:
        """The key of `key_id` (keys.py), as a text names it: `playground.server` connects and
        disconnects, `playground.calibrate` calibrates."""
        from ..keys import shown

        return shown(key_id, self.app.settings.ascii_only)

    def _on(self, session) -> bool:
        """The session is still the one wanted, beside the playground's run."""
        return self.session is session and not self.gone and self.run() is not None

    def _measured(self, measured) -> None:
        """The session's figures: down to the views; a new run or traffic starts the server's
        again; leaving the playground disconnects."""
        self.measured = measured
        if self.gone:
            return
        if not self.on_playground():
            self.disconnect()
            return
        self.stack.update_frame({"server": measured})
        self._check_run()

    def _check_run(self) -> None:
        """A run started over, other traffic, or a pause: the server's segment ends (the next
        starts both again)."""
        sim = self.run()
        session = self.session
        if sim is None or session is None:
            return
        now = sim.time
        scenario = sim.scenario
        if not sim.running and not self._stopping and not sim.done:
            self.say("Paused: the server's traffic stopped too; when the run goes on, both start again "
                     "from the start.")
        if sim is not self._sim or now < self._time or (scenario.workload, scenario.seed) != self._workload \
                or not sim.running:
            self._stop_run(session)
        self._time = now

    def _stop_run(self, session) -> None:
        self._stopping = True
        session.stop_run()

    @property
    def gone(self) -> bool:
        """Nothing is drawn any more: `end` was called, or the app is closing (Textual takes every
        widget off, children first, before the screen hears of it: the views' stack is then no
        longer attached, and a line said would find no notice line to say it on)."""
        return self.ended or not self.stack.is_attached

    def end(self) -> None:
        """The screen is going (the app closes): the session's thread and a calibration's process
        end now, whether or not the loop runs again."""
        self.ended = True
        session, self.session = self.session, None
        if session is not None:
            session.end_now()
        if self._proc is not None and self._proc.returncode is None:
            _kill(self._proc)

    # -- f: calibrate to what was measured
    def calibrate(self) -> None:
        session = self.session or self.last_session
        run = self.run()
        if self.calibrating:
            self.say("A calibration is running: its result reopens the playground.")
            return
        segments = _answered(session) if session is not None else []
        if not segments or run is None:
            self.say(f"Nothing measured yet: {self._key('playground.server')} drives a server with this traffic, "
                     f"then {self._key('playground.calibrate')} calibrates to it.")
            return
        from ..cli.cmd_bench import metadata_entries
        from ..state_folder import write_atomically

        scenario = run.scenario
        folder = Path(self.app.store.directory) / MEASURED_FOLDER
        files = []
        try:
            for k, seg in enumerate(segments):
                meta = metadata_entries(_dials(seg.scenario))
                data = session.result(seg, meta)
                path = folder / f"live-{data['date']}-{k + 1}.json"
                write_atomically(path, json.dumps(data))
                files.append(str(path))
        except OSError as exc:
            self.say(f"The measured results cannot be written: {exc.strerror or exc}.", error=True)
            return
        self.calibrating = True
        answers = sum(seg.completed for seg in segments)
        self.say(f"Calibrating to {answers:,} answers from {session.where} (batchtui calibrate, in the "
                 "background); the playground reopens on the fitted profile.")
        self.worker(partial(self._calibrate, files, scenario, session.where, answers),
                    group="live-calibrate", exclusive=True)

    async def _calibrate(self, files: list[str], scenario, where: str, answers: int) -> None:
        from ..state_folder import write_atomically

        directory = Path(self.app.store.directory)
        output = directory / CALIBRATED_FILE
        base = scenario.gpu.removesuffix("-measured")
        name = f"{base}-measured"
        from ..cli.flag_table import GPU, MODEL, PROFILES

        cmd = [*CALIBRATE, *files, GPU.flag, scenario.gpu, MODEL.flag,
               scenario.model, "--output", str(output), "--name", name, "--jobs", "1"]
        if scenario.profiles_path:
            cmd += [PROFILES.flag, scenario.profiles_path]
        try:
            proc = self._proc = await asyncio.create_subprocess_exec(
                *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
            try:
                out, err = await proc.communicate()
            except BaseException:  # the app or the worker ended first: the process goes with it
                _kill(proc)
                raise
            finally:
                self._proc = None
        except OSError as exc:
            self.calibrating = False
            self.say(f"batchtui calibrate could not start: {exc.strerror or exc}.", error=True)
            return
        self.calibrating = False
        try:  # (what calibrate printed, whole: the notice line says a line of it)
            write_atomically(directory / MEASURED_FOLDER / CALIBRATE_LOG, (out + err).decode("utf-8", "replace"))
        except OSError:
            pass
        if proc.returncode != 0:
            lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
            why = lines[-1].removeprefix("batchtui: error: ") if lines else f"exit status {proc.returncode}"
            why = why if len(why) <= FAILURE_WORDS else why[:FAILURE_WORDS - 3].rsplit(" ", 1)[0] + "..."
            self.say(f"Calibration failed: {why} Measure more runs (a low rate, a high one: each rate set on "
                     f"the dial is a run), then {self._key('playground.calibrate')} again ({MEASURED_FOLDER}/"
                     f"{CALIBRATE_LOG} in the state folder "
                     "has calibrate's report).", error=True)
            return
        await self._reopen(scenario, str(output), name, where, answers)

    async def _reopen(self, scenario, output: str, name: str, where: str, answers: int) -> None:
        from sim.errors import SimError

        from ..learner_gpu import LearnerGpu

        fitted = replace(scenario, gpu=name, profiles_path=output)
        try:
            moved = moved_words(scenario.deployment(), fitted.deployment())
            label = fitted.profiles().gpu(name).name
        except SimError as exc:
            self.say(f"The fitted profile cannot be used: {exc}", error=True)
            return
        said = (f"Calibrated to {answers:,} answers from {where}: {moved}. " if moved else
                f"Calibrated to {answers:,} answers from {where}: nothing moved. ")
        if not await self.reopen(LearnerGpu(name, label, "", True, output)):
            self.say(said + f"The profile is {name} in {output}.")
            return
        if self.session is not None:
            self.show_views("server")
        self.say(said + f"The playground runs on it ({name}, {Path(output).name} in the state folder).")


def _answered(session) -> list:
    """The session's segments with answers: those kept, then the one running."""
    running = [session.segment] if session.segment is not None else []
    return [seg for seg in [*session.segments, *running] if seg.completed]


def _dials(scenario) -> dict:
    """The engine and deployment dials a scenario sets (what the playground says of the server)."""
    from sim.scenario import DEPLOYMENT_KEYS, Scenario

    default = Scenario()
    out = {k: getattr(scenario, k) for k in DEPLOYMENT_KEYS
           if k not in ("gpu", "model") and getattr(scenario, k) != getattr(default, k)}
    out.update(scenario.engine)
    return out


def moved_words(before, after) -> str:
    """The fitted parameters that moved, "eta_bw 0.80 → 0.74" ("" when none did)."""
    from sim.fit import PARAMETERS, value_text

    words = []
    for p in PARAMETERS:
        a, b = getattr(before, p.name), getattr(after, p.name)
        if abs(b - a) > MOVED_BY * max(abs(a), 1e-12):
            words.append(f"{p.name} {value_text(p.name, a)} → {value_text(p.name, b)}")
    return ", ".join(words)


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
