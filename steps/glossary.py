"""The lesson's terms: each with its one-line meaning and the step that teaches it, read from
`glossary.toml` beside this file (the app's glossary key lists them; a test checks that each
teaching step defines its term at first use, and that no step before it uses the term without
defining it there).

A term's `uses` is a regular expression that finds it in lesson text (its abbreviation, its
plural, the dial that names it); `defined` finds the clause that defines it, which must follow
its first use in a step closely (`DEFINITION_REACH` characters of plain text) to count as a
definition in place."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .model import NUM_STEPS, StepError

GLOSSARY_FILE = Path(__file__).with_name("glossary.toml")
DEFINITION_REACH = 200
"""Characters after a term's first use in a step within which its defining clause must end."""
DEFINITION_BEFORE = 80
"""...or before it, within which the clause may begin ("the time between two tokens (ITL)")."""
MAX_MEANING = 150
"""A meaning is one line of the glossary at 80 columns, two at most."""


@dataclass(frozen=True)
class Term:
    name: str
    meaning: str
    step: int
    """The step that teaches it: defines it at its first use there."""
    uses: re.Pattern
    defined: re.Pattern

    def first_use(self, text: str) -> re.Match | None:
        return self.uses.search(text)

    def defined_at_first_use(self, text: str) -> bool:
        """Whether `text` (`plain`) defines the term where it first uses it: its defining clause
        lies between `DEFINITION_BEFORE` characters before that use and `DEFINITION_REACH` after."""
        use = self.first_use(text)
        if use is None:
            return False
        start = max(0, use.start() - DEFINITION_BEFORE)
        return self.defined.search(text, start, use.end() + DEFINITION_REACH) is not None


def plain(text: str) -> str:
    """Lesson text as prose for the term checks: Markdown's marks and runs of white space gone."""
    text = re.sub(r"[*_`|#>]", "", text)
    return re.sub(r"\s+", " ", text)


def read(path: Path = GLOSSARY_FILE) -> tuple[Term, ...]:
    """The terms in lesson order (their teaching step, then the file's order). StepError names
    what is wrong with the file."""
    source = path.name
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise StepError(source, f"cannot read the glossary ({exc})") from None
    entries = data.get("term")
    if not isinstance(entries, list) or not entries:
        raise StepError(source, "the glossary lists its terms as [[term]] tables")
    terms = []
    for i, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or set(entry) != {"name", "meaning", "step", "uses", "defined"}:
            raise StepError(source, f"term {i}: give exactly name, meaning, step, uses and defined")
        name, meaning, step = entry["name"], entry["meaning"], entry["step"]
        if not isinstance(name, str) or not name.strip():
            raise StepError(source, f"term {i}: name must be a string")
        if not isinstance(meaning, str) or not 10 <= len(meaning) <= MAX_MEANING:
            raise StepError(source, f"{name}: the meaning must be one line of up to {MAX_MEANING} characters")
        if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= NUM_STEPS:
            raise StepError(source, f"{name}: step must be the number of the step that teaches it")
        try:
            uses, defined = re.compile(entry["uses"]), re.compile(entry["defined"])
        except (re.error, TypeError) as exc:
            raise StepError(source, f"{name}: uses and defined must be regular expressions ({exc})") from None
        terms.append(Term(name, meaning, step, uses, defined))
    names = [t.name.lower() for t in terms]
    if len(set(names)) != len(names):
        raise StepError(source, "a term is listed twice")
    return tuple(sorted(terms, key=lambda t: t.step))


def problems(texts: dict[int, str], glossary: tuple[Term, ...] | None = None) -> list[str]:
    """What the words of some steps (step number -> its text as read, in order) do wrong by the
    glossary: a teaching step that does not define its term at its first use, or an earlier
    step that uses the term without defining it there."""
    out = []
    for term in glossary if glossary is not None else terms():
        for number, text in sorted(texts.items()):
            text = plain(text)
            if number == term.step and not term.defined_at_first_use(text):
                use = term.first_use(text)
                out.append(f"step {number} teaches {term.name!r} but " + (
                    "never uses it" if use is None else f"does not define it where it first uses it: "
                                                        f"...{text[max(0, use.start() - 40):use.end() + 60]}..."))
            elif number < term.step and term.first_use(text) and not term.defined_at_first_use(text):
                use = term.first_use(text)
                out.append(f"step {number} uses {term.name!r} (taught in step {term.step}) undefined: "
                           f"...{text[max(0, use.start() - 40):use.end() + 40]}...")
    return out


@cache
def terms() -> tuple[Term, ...]:
    """The glossary, read once."""
    return read()
