"""The tutorial app: wiring only. Screens hold the behaviour, widgets the drawing."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from textual import events
from textual.app import App
from textual.geometry import Size
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.widgets import Input

from .cli.flag_table import GPU
from . import gc_policy
from .ending import Ending
from .glyphs import ascii_text
from .key_order import KeyOrder
from .progress import Progress, ProgressStore
from .screens.help import HelpScreen
from .screens.navigation import changes_step
from .screens.too_small import MIN_HEIGHT, MIN_WIDTH, TooSmallScreen
from .screens.tutorial import TutorialScreen
from .settings import AppSettings
from .step_list import summaries_of

THEME = "textual-dark"

SCREEN_STYLES = sorted(Path(__file__).with_name("screens").glob("*.tcss"))
"""Every screen's `.tcss` (each screen names its own in CSS_PATH). Read as the app starts:
Textual re-reads the whole stylesheet and restyles every widget on screen when a screen brings
a file it has not seen, which the first launch's orientation did over the tutorial just drawn
(about a sixth of the time to the first frame), and the help at the first `?`."""


class AsciiScrollBarRender(ScrollBarRender):
    """Scrollbars drawn with spaces only (the thumb is its colour), for `--ascii`."""

    VERTICAL_BARS = [" "] * 8
    HORIZONTAL_BARS = [" "] * 8


class BatchApp(App):
    """A keyboard-only tutorial on how LLM inference servers batch requests."""

    TITLE = "batchtui"
    CSS_PATH = SCREEN_STYLES
    ENABLE_COMMAND_PALETTE = False
    ALLOW_SELECT = False

    def __init__(self, steps: list, settings: AppSettings | None = None,
                 store: ProgressStore | None = None) -> None:
        super().__init__()
        self.steps = steps
        self.settings = settings or AppSettings()
        self.store = store or ProgressStore(self.settings.state_dir)
        self.progress = Progress()
        self.startup_notice: str | None = None
        """Said once the tutorial screen is up (a progress file set aside, for instance)."""
        self.tutorial: TutorialScreen | None = None
        self.keys_read = 0
        """Keys the app has read: a running simulation ends its frame's work when it moves."""
        self.learner_gpu = None
        """`--gpu`: the learner's GPU (a `learner_gpu.LearnerGpu`) once found."""
        self._old_scrollbar = ScrollBar.renderer
        self.ending = Ending(self)
        """How this run ends: the terminal watched, signals, errors nothing caught, the status."""
        self.key_order = KeyOrder(self, self._act_on_key)
        """The keys read and not yet acted on: one at a time, in the order typed."""

    def on_mount(self) -> None:
        self.theme = THEME
        if self.settings.ascii_only:
            ScrollBar.renderer = AsciiScrollBarRender
        if self.settings.reset_progress:
            self.store.reset()
        self.progress, self.startup_notice = self.store.load()
        numbers = [s.number for s in summaries_of(self.steps)]
        wanted = self.settings.start_step or self.progress.current_step
        if wanted not in numbers:
            shown = wanted if wanted < 10**6 else "beyond the last"
            missing = f"Saved progress pointed at step {shown}, which does not exist; opened step {numbers[0]}."
            self.startup_notice = f"{self.startup_notice} {missing}" if self.startup_notice else missing
        index = numbers.index(wanted) if wanted in numbers else 0
        self.tutorial = TutorialScreen(self.steps, index)
        # Its breakpoint class now rather than at its first resize, which would restyle every
        # widget once more before the first frame (about a tenth of the time to it).
        self.tutorial.add_class(*breakpoint_classes(TutorialScreen, self.size))
        self.push_screen(self.tutorial)
        self.call_after_refresh(self._check_size)
        if not self.is_headless:
            self.ending.start()
            # Start-up's objects frozen once the first frame is out, so no full collection walks
            # them again mid-run (a key waited 80-100 ms for one; `gc_policy`).
            self.call_after_refresh(gc_policy.settle_once)
        if self.settings.gpu:
            self.call_after_refresh(self._find_learner_gpu)
        if self.settings.server_url:  # (`--server`: the playground beside it once drawn)
            self.call_after_refresh(self.tutorial.live.connect, self.settings.server_url)

    def _find_learner_gpu(self) -> None:
        """`--gpu`: ask (nvidia-smi for auto) in a thread, after the first frame."""
        self.run_worker(self._look_up_learner_gpu, thread=True, group="learner-gpu", exit_on_error=False)

    def _look_up_learner_gpu(self) -> None:
        from dataclasses import replace

        from .learner_gpu import find, learner_steps

        try:
            gpu = find(self.settings.gpu, self.settings.profiles_path or "")
            changed, kept = learner_steps(self.steps, gpu, scenario_given=self.settings.scenario_path is not None)
            if kept:  # (said with what was found)
                gpu = replace(gpu, notice=f"{gpu.notice} {kept}".strip())
        except Exception as exc:  # noqa: BLE001 -- said on screen; the lessons go on on their GPU
            self.call_from_thread(self._learner_gpu_failed, f"{GPU.flag} {self.settings.gpu}: {exc}")
            return
        self.call_from_thread(self._learner_gpu_found, gpu, changed)

    def _learner_gpu_failed(self, message: str) -> None:
        if self.tutorial is not None:
            self.tutorial.say(message, error=True)

    def _learner_gpu_found(self, gpu, changed: dict) -> None:
        self.learner_gpu = gpu
        for index, step in changed.items():
            self.steps[index] = step
        if self.tutorial is not None:
            self.run_worker(partial(self.tutorial.learner_gpu_known, gpu, set(changed)), group="learner-gpu")

    def on_unmount(self) -> None:
        ScrollBar.renderer = self._old_scrollbar
        self.ending.stop()

    def _handle_exception(self, error: Exception) -> None:
        # Textual's hook for an exception nothing else caught. Its default prints the traceback
        # with every local variable (once, a whole progress file's text); a learner gets one
        # line instead and a capped report (see `ending`). Tests (headless) keep Textual's way,
        # so a failing test shows its traceback.
        if self.is_headless:
            super()._handle_exception(error)
            return
        self.ending.unexpected(error)
        self.panic()  # stop at once, print nothing: `tui.run_app` prints the line

    async def on_event(self, event: events.Event) -> None:
        if not isinstance(event, (events.Key, events.Paste)) or event.is_forwarded:
            await super().on_event(event)
            return
        # A key (or a paste) from the terminal: acted on once every key read before it has
        # been (`key_order.py`).
        if isinstance(event, events.Key):
            self.keys_read += 1  # a running simulation makes way (`simulation.keys_read`)
        # Esc and a key that followed it within the escape delay, from a driver other than ours
        # (`key_input.py` reads them as both keys): Textual reads the pair as alt+key, which
        # nothing here binds. They are the two keys the learner pressed.
        for one in escape_then_key(event) or (event,):
            await self.key_order.arrived(one)

    async def _act_on_key(self, event: events.Event) -> None:
        """Textual's handling of a key from the terminal (`KeyOrder` hands them out)."""
        # A key for a text box (the answer box, a dial's value) while a step change is on its
        # way is for the step wanted, as typed slowly: that step is drawn first (Tab 4 ctrl+n 7
        # in one read typed the 7 into the box of the step left). A step key for it (ctrl+n
        # again) draws one step more than a row of them on the lesson would; the rest coalesce.
        if self.tutorial is not None and self.tutorial.navigation.pending and isinstance(self.focused, Input):
            await self.tutorial.navigation.settle_now()
        await super().on_event(event)

    def get_driver_class(self):
        # On a terminal, a lone Esc answered once its escape delay is up (`key_input.py`).
        from .key_input import driver_for

        return driver_for(super().get_driver_class())

    async def run_action(self, action, default_namespace=None, namespaces=None) -> bool:
        # A key that is not a step key acts on the step the learner asked for: the step keys
        # read before it are drawn first (`screens/navigation.py`), and its run is started if it
        # is the first step's, still to start a moment after the first frame (+, space, a guess
        # or a dial in that moment act on it).
        if self.tutorial is not None and not changes_step(action):
            await self.tutorial.navigation.settle_now()
            await self.tutorial.run.begin_now()
        return await super().run_action(action, default_namespace, namespaces)

    def words(self, text: str) -> str:
        """Text as this terminal shows it: plain ASCII under `--ascii`."""
        return ascii_text(text) if self.settings.ascii_only else text

    # -- progress (screens call these)
    def remember_step(self, number: int) -> None:
        self.progress.current_step = number
        self.save_progress()

    def record_answer(self, number: int, answer: str, completed: bool) -> None:
        self.progress.keep_answer(number, answer)
        if completed:
            self.progress.completed.add(number)
        self.save_progress()

    def exit(self, result=None, return_code: int = 0, message=None) -> None:
        # Every way out (q, ctrl+q, SIGTERM, SIGINT, a lost terminal) keeps what is typed in the
        # answer box and not entered yet.
        if self.tutorial is not None and self.store.loaded and self.tutorial.lesson.keep_draft(self.progress):
            self.save_progress()
        super().exit(result, return_code, message)

    def save_progress(self) -> None:
        notice = self.store.save(self.progress)
        if notice and self.tutorial is not None:
            self.tutorial.say(notice, error=True)

    # -- the terminal's size
    def on_resize(self, event: events.Resize) -> None:
        # This runs before App's own handler has stored the new size: use the event's. The keys
        # read before it are acted on first, where they were typed (`KeyOrder.in_turn`).
        size = event.size
        self.key_order.in_turn(lambda: self._check_size(size))

    def _check_size(self, size: Size | None = None) -> None:
        width, height = size or self.size
        small = width < MIN_WIDTH or height < MIN_HEIGHT
        showing = isinstance(self.screen, TooSmallScreen)
        if small and not showing:
            if self.tutorial is not None:
                self.tutorial.run.hide()  # the run waits unseen, and goes on once shown again
            self.push_screen(TooSmallScreen())
        elif not small and showing:
            self.pop_screen()
            if self.tutorial is not None:
                self.tutorial.run.show()

    def action_help(self) -> None:
        if not isinstance(self.screen, (HelpScreen, TooSmallScreen)):
            if not self.is_screen_installed("help"):  # made once, shown again (`HelpScreen`)
                self.install_screen(HelpScreen(), "help")
            self.push_screen("help")

    def action_glossary(self) -> None:
        from .screens.glossary import GlossaryScreen

        if self.tutorial is not None and self.screen is self.tutorial:
            self.push_screen(GlossaryScreen(self.tutorial.step.number))


def escape_then_key(event: events.Event) -> tuple[events.Key, events.Key] | None:
    """An alt+key event from the terminal as the Esc and the key it was typed as (None for any
    other event). batchtui binds no alt key, so alt+key only ever comes from Esc pressed shortly
    before another key."""
    if not isinstance(event, events.Key) or event.is_forwarded or not event.key.startswith("alt+"):
        return None
    key = event.key[len("alt+"):]
    if not key or key.startswith(("alt+", "ctrl+alt")):
        return None
    character = event.character
    if character is not None and character.startswith("\x1b"):
        character = character[1:] or None
    return events.Key("escape", "\x1b"), events.Key(key, character)


def breakpoint_classes(screen_class, size: Size) -> list[str]:
    """The classes Textual gives a screen of this class at `size` (for each axis, the highest
    breakpoint it reaches), so a screen can carry them from the start."""
    classes = []
    for breakpoints, extent in ((screen_class.HORIZONTAL_BREAKPOINTS, size.width),
                                (screen_class.VERTICAL_BREAKPOINTS, size.height)):
        reached = [(threshold, name) for threshold, name in breakpoints or () if extent >= threshold]
        if reached:
            classes.append(max(reached)[1])
    return classes

