"""The tutorial app: wiring only. Screens hold the behaviour, widgets the drawing."""

from __future__ import annotations

import asyncio
import errno
import signal

from textual import events
from textual.app import App
from textual.geometry import Size
from textual.scrollbar import ScrollBar, ScrollBarRender

from . import terminal
from .glyphs import ascii_text
from .progress import Progress, ProgressStore
from .screens.help import HelpScreen
from .screens.too_small import MIN_HEIGHT, MIN_WIDTH, TooSmallScreen
from .screens.tutorial import TutorialScreen
from .settings import AppSettings
from .step_list import summaries_of

THEME = "textual-dark"


class AsciiScrollBarRender(ScrollBarRender):
    """Scrollbars drawn with spaces only (the thumb is its colour), for `--ascii`."""

    VERTICAL_BARS = [" "] * 8
    HORIZONTAL_BARS = [" "] * 8


class BatchApp(App):
    """A keyboard-only tutorial on how LLM inference servers batch requests."""

    TITLE = "batchtui"
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
        self._old_scrollbar = ScrollBar.renderer
        self.crash_message: str | None = None
        """Set when an error nothing caught stopped the app: the one line to print on exit."""
        self.terminal_lost = False
        """Set when the terminal went away under the app (it then exits with status 129)."""
        self._watch: terminal.TerminalWatch | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._old_handlers: dict[int, object] = {}

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
            self._watch_terminal()

    def on_unmount(self) -> None:
        ScrollBar.renderer = self._old_scrollbar
        if self._watch is not None:
            self._watch.stop()
        for signum, handler in self._old_handlers.items():
            signal.signal(signum, handler)

    # -- the terminal going away, signals, and errors nothing caught
    def _watch_terminal(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._watch = terminal.TerminalWatch(self._terminal_gone)
        self._watch.start()
        # SIGHUP keeps its default (the process ends at once: progress is saved on every change).
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._old_handlers[signum] = signal.signal(signum, self._on_stop_signal)

    def _on_stop_signal(self, signum: int, frame: object) -> None:
        """SIGTERM or SIGINT: put the terminal back and exit with 128 + the signal's number."""
        status = 128 + signum
        terminal.end_process_after(terminal.SIGNAL_GRACE_S, status)
        self._exit_from_anywhere(status)

    def _terminal_gone(self) -> None:
        """The terminal hung up (called from the watch's thread, or for a write that failed)."""
        if self.terminal_lost:
            return
        self.terminal_lost = True
        terminal.end_process_after(terminal.LOST_GRACE_S, terminal.EXIT_HANGUP)
        self._exit_from_anywhere(terminal.EXIT_HANGUP)

    def _exit_from_anywhere(self, status: int) -> None:
        try:
            self._loop.call_soon_threadsafe(self.exit, None, status)
        except (AttributeError, RuntimeError):  # no loop, or already closed: the app is ending
            pass

    def _handle_exception(self, error: Exception) -> None:
        # Textual's hook for an exception nothing else caught. Its default prints the traceback
        # with every local variable (once, a whole progress file's text). A learner gets one
        # line instead, printed by `tui.run_app` once the terminal is restored, and the full
        # story in a capped report under the state directory. Tests (headless) keep Textual's
        # way, so a failing test shows its traceback.
        if self.is_headless:
            super()._handle_exception(error)
            return
        if self.terminal_lost or (_is_terminal_error(error) and terminal.hung_up(terminal.standard_streams())):
            self._terminal_gone()  # writing to a terminal that is gone is no crash
            return
        if self.crash_message is None:
            saved = False
            try:
                self.store.save(self.progress)
                saved = not (self.store.save_failed or self.store.keep_file)
            except Exception:
                pass
            from . import crash

            self.crash_message = crash.record(self.store.directory, error, self._crash_context(), saved)
        self.panic()  # stop at once, print nothing: run_app prints the line

    def _crash_context(self) -> dict[str, object]:
        context: dict[str, object] = {}
        try:
            context["screens"] = " > ".join(type(screen).__name__ for screen in self.screen_stack)
            context["terminal"] = f"{self.size.width}x{self.size.height}"
            context["progress"] = (f"step {self.progress.current_step}, completed "
                                   f"{sorted(self.progress.completed)}")
        except Exception as exc:
            context["context"] = f"incomplete ({type(exc).__name__})"
        return context

    def words(self, text: str) -> str:
        """Text as this terminal shows it: plain ASCII under `--ascii`."""
        return ascii_text(text) if self.settings.ascii_only else text

    # -- progress (screens call these)
    def remember_step(self, number: int) -> None:
        self.progress.current_step = number
        self.save_progress()

    def record_answer(self, number: int, answer: str, completed: bool) -> None:
        self.progress.answers[number] = answer
        if completed:
            self.progress.completed.add(number)
        self.save_progress()

    def save_progress(self) -> None:
        notice = self.store.save(self.progress)
        if notice and self.tutorial is not None:
            self.tutorial.say(notice, error=True)

    # -- the terminal's size
    def on_resize(self, event: events.Resize) -> None:
        # This runs before App's own handler has stored the new size: use the event's.
        self._check_size(event.size)

    def _check_size(self, size: Size | None = None) -> None:
        width, height = size or self.size
        small = width < MIN_WIDTH or height < MIN_HEIGHT
        showing = isinstance(self.screen, TooSmallScreen)
        if small and not showing:
            self.push_screen(TooSmallScreen())
        elif not small and showing:
            self.pop_screen()

    def action_help(self) -> None:
        if not isinstance(self.screen, (HelpScreen, TooSmallScreen)):
            self.push_screen(HelpScreen())


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


def _is_terminal_error(error: BaseException) -> bool:
    """A failed write or read on a terminal (or textual-serve's pipe) that has gone away."""
    return isinstance(error, OSError) and error.errno in (errno.EIO, errno.EPIPE, errno.ENXIO, errno.EBADF)
