"""The playground's file prompts (`w` save, `o` open): a file name, prefilled, Enter to go on."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static

from ..widgets.answer_box import AnswerBox
from .modal import OverlayScreen


class FilePromptScreen(OverlayScreen[Path | None]):
    """Dismisses with the file named, or None (Esc, or Enter on an empty line).

    Saving over a file that exists takes a second Enter; opening a file that is not there (or is
    a folder) says so and keeps the prompt open, so a typo costs one key."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = [Binding("escape", "close", "cancel")]

    def __init__(self, title: str, suggestion: Path, saving: bool) -> None:
        super().__init__()
        self.title_text = title
        self.suggestion = suggestion
        self.saving = saving
        self._confirmed: Path | None = None
        """The existing file a first Enter was warned about; a second Enter on it replaces it."""

    def compose(self) -> ComposeResult:
        with Vertical(id="file-prompt-body"):
            yield Static(self.title_text, id="file-prompt-title", markup=False)
            yield AnswerBox(str(self.suggestion), id="file-prompt-input")
            yield Static("Enter: " + ("save" if self.saving else "open") + "   Esc, or Enter on an empty "
                         "line: cancel", id="file-prompt-status", markup=False)

    def on_mount(self) -> None:
        found = self.query(Input)
        if found:  # (not composed if the app is already closing)
            found.first().focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            self.dismiss(None)
            return
        if "\0" in text:
            self._say("A file name cannot hold a NUL character.")
            return
        path = Path(text).expanduser()
        try:
            is_dir, exists = path.is_dir(), path.exists()
        except OSError as exc:
            self._say(f"{path} cannot be used: {exc.strerror or type(exc).__name__}.")
            return
        if is_dir:
            self._say(f"{path} is a folder: add a file name.")
            return
        if not self.saving and not exists:
            self._say(f"There is no {path}.")
            return
        if self.saving and exists and path != self._confirmed:
            self._confirmed = path
            self._say(f"{path.name} exists: Enter again replaces it.")
            return
        self.dismiss(path)

    def _say(self, message: str) -> None:
        self.query_one("#file-prompt-status", Static).update(self.app.words(message))
