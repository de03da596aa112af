"""A learner's progress: the step they are on, the activities they finished, their answers, and
what they typed in an answer box without entering it yet (`drafts`).

Kept as one small JSON file in the state folder (`batchtui.state_folder`), written atomically, so a
crash mid-write never leaves half a file; temporary files a killed run left behind are removed at
the next start. A file that cannot be read, whatever it holds, is renamed aside and reported in one
line: losing a bookmark must never stop the tutorial from opening. A file from a newer batchtui is
kept aside as it is, never overwritten; a version no batchtui has (1e30) is unreadable. A read-only
file is read and never replaced (one line says so). A folder that cannot be searched (one a `sudo
batchtui` left, owned by root) is reported in one line and the session runs without saving. A
progress file that is a symbolic link (a dotfile manager's) is written through: its target is
replaced, the link kept; a link whose target's folder is gone fails to save, creating nothing.

The format is version 1 throughout: `drafts` came later as an optional field. A file without it
reads as having none, and an older batchtui reading a file with it ignores it (a version bump
would make that older batchtui set the whole file aside). A malformed `drafts`, or an entry of it,
is dropped and the rest read: a draft is worth less than the progress beside it. A draft is kept
per question: `"N"` is step N's first question's (the one each visit of the step asks first),
`"N:Q"` its Q-th (ctrl+r asks the next). A file whose drafts were kept per step (before
`"N:Q"`) reads each as its step's first question's, the one it showed on; an older batchtui
reading `"N:Q"` drops it as malformed, and shows `"N"` on the first question, as it should.

What is saved can always be read back: every text kept (an answer, a draft) is cut to
`MAX_TEXT_CHARS`, and a file that would still pass `MAX_FILE_BYTES` (drafts on dozens of
questions, each a pasted page) leaves out the longest drafts until it fits (`file_text`).
"""

from __future__ import annotations

import json
import os
import stat
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path

from .state_folder import PROGRESS_FILE, remove_stale_temporaries, state_dir, sync_directory, write_atomically

FORMAT_VERSION = 1
MAX_FORMAT_VERSION = 999
"""A larger version is no format number of any batchtui: the file is unreadable, not newer."""
MAX_FILE_BYTES = 1 << 20
"""A real progress file is a few kilobytes; anything past this is not ours and is not read."""
MAX_TEXT_CHARS = 4096
"""An answer or a draft is kept cut to this many characters (an answer is a number and a unit; a
paste can be anything): written as UTF-8, a character takes at most 4 bytes (`file_text`), so
twenty steps' answers and first questions' drafts, 40 texts at 16 KiB, fill under two thirds of
`MAX_FILE_BYTES`; the file is checked against it as it is written all the same."""


def clean_text(text: str) -> str:
    """An answer as the app may show it again: no control characters, no unpaired surrogates."""
    return "".join(
        "\ufffd" if unicodedata.category(ch) == "Cs" else ch
        for ch in text
        if unicodedata.category(ch) != "Cc"
    )


@dataclass
class Progress:
    """What survives a restart."""

    current_step: int = 1
    completed: set[int] = field(default_factory=set)
    """Numbers of the steps whose activity the learner finished."""
    answers: dict[int, str] = field(default_factory=dict)
    """The last answer typed or chosen on each step, as the learner gave it (`keep_answer`)."""
    drafts: dict[tuple[int, int], str] = field(default_factory=dict)
    """Text in a question's answer box not entered (Enter) as an answer yet, as the learner left
    it (the step, a quit, ctrl+r's next question), by (step number, question: 1 for the first a
    visit of the step asks, 2 for the one ctrl+r asks next...): the box shows it again when that
    question is asked again. Never an answer: it completes nothing."""

    def keep_answer(self, number: int, text: str) -> None:
        """Keep `text` as step `number`'s answer, as any text is kept (`kept_text`)."""
        self.answers[number] = kept_text(text)

    def keep_draft(self, number: int, text: str, question: int = 1) -> bool:
        """Keep `text` as the draft of step `number`'s `question` ("" forgets it); True if that
        changed it."""
        text, key = kept_text(text), (number, question)
        if text == self.drafts.get(key, ""):
            return False
        if text:
            self.drafts[key] = text
        else:
            del self.drafts[key]
        return True

    def drafts_of(self, number: int) -> dict[int, str]:
        """Step `number`'s drafts by question (1: the first a visit asks)."""
        return {question: text for (step, question), text in self.drafts.items() if step == number}

    def still_open(self, numbers) -> str:
        """One line naming the steps (of `numbers`) not completed yet, runs joined ("1, 5,
        11-17"); "" when every one is done."""
        open_ = [n for n in numbers if n not in self.completed]
        if not open_:
            return ""
        runs: list[list[int]] = []
        for n in open_:
            if runs and n == runs[-1][-1] + 1:
                runs[-1].append(n)
            else:
                runs.append([n])
        shown = ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)
        return f"Still open: step{'s' if len(open_) > 1 else ''} {shown}."

    def to_json(self) -> dict:
        return {
            "version": FORMAT_VERSION,
            "current_step": self.current_step,
            "completed": sorted(self.completed),
            "answers": {str(k): v for k, v in sorted(self.answers.items())},
            "drafts": {_draft_key(*k): v for k, v in sorted(self.drafts.items())},
        }

    def file_text(self) -> str:
        """The progress file's text: at most `MAX_FILE_BYTES` in UTF-8, so the next start reads
        it. Past that (only drafts on dozens of questions, each a pasted page, get there), the
        longest drafts are left out of the file (not out of this session) until it fits; answers
        alone never get there from the app (`MAX_TEXT_CHARS`, one a step), and a file that still
        does not fit raises `TooLarge` rather than be written."""
        kept = self
        text = _dumped(kept)
        over = len(text.encode("utf-8")) - MAX_FILE_BYTES
        longest = sorted(self.drafts, key=lambda k: len(self.drafts[k].encode("utf-8")), reverse=True)
        while over > 0:
            if not kept.drafts:
                raise TooLarge(f"{len(text.encode('utf-8')) // 1024} KiB, over the {MAX_FILE_BYTES // 1024} KiB "
                               "a start reads")
            # Enough of the longest drafts to make up the bytes over (their text at least), checked again.
            drop, freed = [], 0
            while longest and freed < over:
                key = longest.pop(0)
                drop.append(key)
                freed += len(kept.drafts[key].encode("utf-8"))
            kept = replace(kept, drafts={k: v for k, v in kept.drafts.items() if k not in drop})
            text = _dumped(kept)
            over = len(text.encode("utf-8")) - MAX_FILE_BYTES
        return text

    @classmethod
    def from_json(cls, data: object) -> "Progress":
        """Parse a saved file; raise ValueError with a short reason if it is not one of ours."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        step = data.get("current_step", 1)
        completed = data.get("completed", [])
        answers = data.get("answers", {})
        if not _is_int(step) or step < 1:
            raise ValueError("current_step is not a step number")
        if not isinstance(completed, list) or not all(_is_int(n) for n in completed):
            raise ValueError("completed is not a list of step numbers")
        if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
            raise ValueError("answers is not a table of text")
        try:
            answers_by_step = {int(k): kept_text(v) for k, v in answers.items()}
        except ValueError:
            raise ValueError("answers are not keyed by step number") from None
        return cls(current_step=step, completed=set(completed), answers=answers_by_step,
                   drafts=_drafts(data.get("drafts")))


class TooLarge(ValueError):
    """The progress would make a file too large to read back (`Progress.file_text`)."""


def _dumped(progress: Progress) -> str:
    # As UTF-8, not \u escapes: a character takes at most 4 bytes (an emoji's escape pair, 12).
    # (`kept_text` leaves no control character, which would be escaped, nor a lone surrogate.)
    return json.dumps(progress.to_json(), indent=1, ensure_ascii=False)


def _draft_key(number: int, question: int) -> str:
    """A draft's key in the file: the step number for its first question (as a file kept per
    step had it), "N:Q" for a later one."""
    return str(number) if question == 1 else f"{number}:{question}"


def _drafts(found: object) -> dict[tuple[int, int], str]:
    """The drafts a file holds: what is not a question's text is dropped, not refused."""
    drafts: dict[tuple[int, int], str] = {}
    if not isinstance(found, dict):
        return drafts
    for key, text in found.items():
        parts = key.split(":")
        try:
            number, question = int(parts[0]), int(parts[1]) if len(parts) == 2 else 1
        except ValueError:
            continue
        if len(parts) > 2:
            continue
        if number >= 1 and question >= 1 and isinstance(text, str) and (text := kept_text(text)):
            drafts[number, question] = text
    return drafts


def kept_text(text: str) -> str:
    """Any text progress keeps (an answer, a draft): cut to `MAX_TEXT_CHARS`, shown again as
    typed bar control characters (`clean_text`)."""
    return clean_text(text[:MAX_TEXT_CHARS])


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class ProgressStore:
    """Loads and saves `Progress` in one directory. Never raises for a bad or missing file."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else state_dir()
        self.path = self.directory / PROGRESS_FILE
        self.save_failed = False
        """Set once a save failed, so the app reports it once rather than on every step."""
        self.keep_file = False
        """Set when a file that could not be used could not be moved aside either: this session
        then never writes over it."""
        self.loaded = False
        """`load` has returned: what the app holds is the learner's progress (or a fresh one in
        place of a file set aside). Until then, nothing may be saved over the file (a crash at
        start-up saved an empty progress over it)."""

    def load(self) -> tuple[Progress, str | None]:
        """The saved progress (or a fresh one) and a one-line notice if the file was set aside."""
        found = self._load()
        self.loaded = True
        return found

    def _load(self) -> tuple[Progress, str | None]:
        remove_stale_temporaries(self.directory)
        try:
            info = self.path.stat()  # (through a symbolic link)
        except FileNotFoundError:
            return Progress(), None
        except OSError as exc:  # the folder cannot be searched (a root-owned one), or is a file
            self.keep_file = True
            return Progress(), (f"Progress cannot be read or saved in {self.directory} ({_reason(exc)}); "
                                "this session runs without saving.")
        try:
            if not stat.S_ISREG(info.st_mode):  # a FIFO would never finish reading
                return Progress(), self._set_aside("not a regular file")
            with open(self.path, "rb") as file:
                raw = file.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return Progress(), None
        except OSError as exc:
            return Progress(), self._set_aside(_reason(exc))
        if len(raw) > MAX_FILE_BYTES:
            return Progress(), self._set_aside(f"larger than {MAX_FILE_BYTES // 1024} KiB")
        try:
            data = json.loads(raw.decode("utf-8-sig"))  # an editor's byte-order mark is no harm
        except UnicodeDecodeError:
            return Progress(), self._set_aside("not UTF-8 text")
        except RecursionError:
            return Progress(), self._set_aside("nested too deeply")
        except ValueError as exc:  # json.JSONDecodeError is a ValueError too
            return Progress(), self._set_aside(_first_line(exc))
        version = data.get("version", FORMAT_VERSION) if isinstance(data, dict) else FORMAT_VERSION
        if not _is_int(version) or not 1 <= version <= MAX_FORMAT_VERSION:
            return Progress(), self._set_aside("its version is not a format number")
        if version > FORMAT_VERSION:
            return Progress(), self._keep_newer(version)
        try:
            progress = Progress.from_json(data)
        except ValueError as exc:
            return Progress(), self._set_aside(_first_line(exc))
        if not info.st_mode & 0o222 or not os.access(self.path, os.W_OK):
            self.keep_file = True  # made read-only by its owner: read, never replaced
            return progress, (f"Saved progress in {self.path} is read-only: it was read, and this session's "
                              "progress is not saved over it.")
        return progress, None

    def first_launch(self) -> bool:
        """No progress saved, not even one set aside as unreadable (--reset-progress starts over,
        orientation included). A folder that cannot be searched is someone's earlier run: no."""
        try:
            return not self.path.exists() and not any(self.directory.glob(PROGRESS_FILE + ".*"))
        except OSError:
            return False

    def save(self, progress: Progress) -> str | None:
        """Write atomically. Returns a one-line notice on the first failure, else None."""
        if self.keep_file:
            return None  # the load notice said so
        try:
            write_atomically(self.path, progress.file_text())
        except (OSError, TooLarge) as exc:
            if self.save_failed:
                return None
            self.save_failed = True
            return f"Progress cannot be saved to {self.path} ({_reason(exc)}); it will last this session only."
        self.save_failed = False
        return None

    def reset(self) -> None:
        """Forget all progress (`--reset-progress`)."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass

    def _set_aside(self, reason: str) -> str:
        aside, error = self._move_aside("unreadable")
        if error:
            return (f"Saved progress in {self.path} is unreadable ({reason}) and could not be moved ({error}); "
                    "starting at step 1 without saving over it.")
        return f"Saved progress was unreadable ({reason}); moved it to {aside.name} and started at step 1."

    def _keep_newer(self, version: int) -> str:
        aside, error = self._move_aside(f"v{version}")
        if error:
            return (f"Saved progress in {self.path} is from a newer batchtui (format {version}) and could not "
                    f"be moved ({error}); starting at step 1 without saving over it.")
        return (f"Saved progress is from a newer batchtui (format {version}); kept it untouched as "
                f"{aside.name} and started at step 1.")

    def _move_aside(self, label: str) -> tuple[Path, str | None]:
        """Rename the file to `progress.json.LABEL` (or `-2`, `-3`... if taken); (path, error)."""
        aside = self.path.with_name(f"{PROGRESS_FILE}.{label}")
        n = 1
        try:
            while aside.exists():
                n += 1
                aside = self.path.with_name(f"{PROGRESS_FILE}.{label}-{n}")
            os.replace(self.path, aside)
        except OSError as exc:
            self.keep_file = True
            return aside, _reason(exc)
        sync_directory(self.directory)
        return aside, None


def _first_line(exc: BaseException) -> str:
    text = str(exc).split("\n")[0]
    return text if len(text) <= 120 else text[:117] + "..."


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TooLarge):
        return str(exc)
    return getattr(exc, "strerror", None) or type(exc).__name__
