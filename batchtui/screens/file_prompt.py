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

    Saving over a file that exists takes a second Enter, unless it is `own_file` (the one this
    session saved or opened); opening a file that is not there (or is a folder) says so and keeps
    the prompt open, so a typo costs one key. With `within` (a served session: anyone who reaches
    the page types here), a name is taken inside that folder and one leading out is refused."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    # Help over the prompt: F1 (as in every text box; ? is a character of a file name, typed into
    # it, and the status line says F1). ? too once the box has no focus.
    BINDINGS = [Binding("escape", "close", "cancel"),
                Binding("f1", "app.help", "help", show=False, priority=True),
                Binding("question_mark", "app.help", "help", show=False)]

    def __init__(self, title: str, suggestion: Path, saving: bool, own_file: Path | None = None,
                 within: Path | None = None) -> None:
        super().__init__()
        self.within = within
        self.title_text = title
        self.suggestion = suggestion
        self.saving = saving
        self._confirmed: Path | None = own_file
        """An existing file Enter may replace: this session's own, or one a first Enter warned about."""

    def compose(self) -> ComposeResult:
        with Vertical(id="file-prompt-body"):
            yield Static(self.title_text, id="file-prompt-title", markup=False)
            # The cursor at the end, nothing selected: the usual edit is the file name.
            yield AnswerBox(str(self.suggestion), id="file-prompt-input", select_on_focus=False)
            yield Static(f"Enter {'saves' if self.saving else 'opens'}   ctrl+u clears   "
                         "Esc (or Enter on empty) cancels   F1 help", id="file-prompt-status", markup=False)

    def on_mount(self) -> None:
        found = self.query(Input)
        if found:  # (not composed if the app is already closing)
            found.first().focus()

    def on_answer_box_leave(self, event: AnswerBox.Leave) -> None:
        """Escape in the box (the box takes it before the screen's binding) cancels the prompt."""
        event.stop()
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            self.dismiss(None)
            return
        if "\0" in text:
            self._say("A file name cannot hold a NUL character.")
            return
        try:
            if self.within is not None:
                from ..serving import confine

                try:
                    path = confine(text, self.within)
                except ValueError as exc:
                    self._say(str(exc))
                    return
            else:
                path = Path(text).expanduser()
            is_dir, exists = path.is_dir(), path.exists()
        except (OSError, RuntimeError) as exc:  # RuntimeError: ~someone with no home
            self._say(f"{text} cannot be used: {getattr(exc, 'strerror', None) or exc}.")
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
