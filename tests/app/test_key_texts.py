"""A text that names a key names the key that is bound: the tutorial's keys come from
`batchtui/keys.py` (`keys.shown`), so binding one elsewhere in that table cannot leave a text
saying the old one ("r resets", "f calibrates", "(q quits)" were typed by hand once).

- no string of the tutorial's screens and widgets (docstrings aside) types a key of keys.py by
  hand: as "r resets", "f again", "(q quits)" or `m`;
- a key a screen binds itself (the model picker's `s`, an input's ctrl+u) is named as that
  screen binds it; the served engine's screen (`serve --tui`) binds its quit key from keys.py;
- the lessons' keys are the ones keys.py binds for what the lesson says they do;
- with keys.py's keys bound elsewhere, the texts name the new keys."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

import shared_steps
from batchtui import keys

ROOT = Path(__file__).resolve().parents[2]
UI = [*sorted((ROOT / "batchtui").glob("*.py")), *sorted((ROOT / "batchtui" / "screens").rglob("*.py")),
      *sorted((ROOT / "batchtui" / "widgets").rglob("*.py")), ROOT / "batchtui" / "serve" / "tui.py"]
"""The modules that draw the tutorial (and the served engine's screen); the command line's and
the server's texts name flags and fields, not keys."""

_KEY = r"(?:ctrl\+|\^)?[a-z.?+\-]"
MENTION = re.compile(
    rf"(?<![\w'’/.+^`-])(?P<plain>{_KEY})(?![\w'’/+`-])\s+(?:again\b|for\b|[a-z]+s\b)"  # r resets, f again, ^d for
    rf"|`(?P<quoted>{_KEY})`")                                                     # `m`
"""A key named in a text: a lone key before a verb ("r resets", "(q quits)", "ctrl+r asks", "f
again", "^d for the answer"), or a key in backquotes."""


def key_tokens() -> set[str]:
    """Every key of keys.py as a text may spell it (`r`, `ctrl+r`, `^r`, `.`)."""
    tokens = set()
    for key in keys.KEYS:
        for name in key.keys.split(","):
            tokens |= {name, keys.display(name)}
    return tokens


def literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string in `path` but its docstrings (a module's, a class's, a
    function's, and the strings under assignments that document them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    documenting = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else ():
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                documenting.add(id(statement.value))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in documenting]


def mentions(text: str) -> list[tuple[str, str]]:
    """(key, the words that name it) for each key `text` names."""
    return [(m["plain"] or m["quoted"], m.group(0)) for m in MENTION.finditer(text)]


def bound(binder: type, key: str, action: str) -> bool:
    """`binder` (a screen, an app, a widget) binds `key` to `action` itself (its BINDINGS or a
    class it comes from)."""
    for cls in binder.__mro__:
        for binding in vars(cls).get("BINDINGS", ()):
            names, act = (binding.key, binding.action) if hasattr(binding, "key") else binding[:2]
            if key in names.split(",") and act == action:
                return True
    return False


def _model_picker():
    from batchtui.screens.model_picker import ModelPickerScreen

    return ModelPickerScreen


def _answer_box():
    from batchtui.widgets.answer_box import AnswerBox

    return AnswerBox


OWN_KEYS = [
    # (module, the words, the screen that binds the key itself, its key, its action)
    ("batchtui/screens/model_picker.py", "s drafts", _model_picker, "s", "method"),
    ("batchtui/screens/file_prompt.py", "ctrl+u clears", _answer_box, "ctrl+u", "delete_left_all"),
    ("batchtui/screens/live_server.py", "ctrl+u clears", _answer_box, "ctrl+u", "delete_left_all"),
]


def test_no_text_of_the_tutorial_types_a_key_of_keys_py_by_hand():
    tokens = key_tokens()
    own = {(module, words) for module, words, *_ in OWN_KEYS}
    typed = []
    for path in UI:
        module = path.relative_to(ROOT).as_posix()
        for line, text in literals(path):
            typed += [f"{module}:{line}: {words!r}" for key, words in mentions(text)
                      if key in tokens and (module, words) not in own]
    assert typed == [], "name these keys with keys.shown(<the key's id>):\n" + "\n".join(typed)


def test_the_help_lines_and_the_too_small_screen_take_their_keys_from_the_table():
    """A help line is shown beside its keys: it names none itself ("b again: unpin" said b after
    b was bound elsewhere). The too-small screen and the served engine's screen quit on the app's
    quit keys."""
    from batchtui.screens.too_small import TooSmallScreen
    from batchtui.serve.tui import ServeApp

    tokens = key_tokens()
    assert [(key.id, words) for key in keys.KEYS for k, words in mentions(key.help) if k in tokens] == []
    for key_id in ("app.quit", "chord.quit"):
        assert bound(TooSmallScreen, keys.BY_ID[key_id].keys, "app.quit"), key_id
    assert bound(ServeApp, keys.BY_ID["app.quit"].keys, "app.quit")


def test_the_check_finds_each_way_of_typing_a_key():
    assert mentions("finished (r resets)") == [("r", "r resets")]
    assert mentions("then f again (see") == [("f", "f again")]
    assert mentions("ctrl+r asks a new question.") == [("ctrl+r", "ctrl+r asks")]
    assert mentions("**Chat**: `m` sets it; `.` steps") == [("m", "`m`"), (".", "`.`")]
    assert mentions("Enlarge it. (q quits)") == [("q", "q quits")]
    # Words that only look like keys are not keys: an article, a flag, a field, a file name.
    tokens = key_tokens()
    assert [m for m in mentions("a pass of tokens, --max-num-seqs, n_choices, x.toml, r/s it, 2 runs")
            if m[0] in tokens] == []


@pytest.mark.parametrize(("module", "words", "binder", "key", "action"), OWN_KEYS,
                         ids=[f"{m.rsplit('/', 1)[1]}:{w}" for m, w, *_ in OWN_KEYS])
def test_a_key_a_screen_binds_itself_is_named_as_it_binds_it(module, words, binder, key, action):
    texts = [text for _, text in literals(ROOT / module)]
    assert any(words in text for text in texts), f"{words!r} is no longer in {module}: drop it from OWN_KEYS"
    assert bound(binder(), key, action), f"{binder().__name__} does not bind {key} to {action}"


LESSON_KEYS = [
    # (lesson, the words, the key's id in keys.py, the key the words name)
    ("06-inside-one-iteration.md", "press `.` for one iteration", "sim.single_iteration", "."),
    ("06-inside-one-iteration.md", "space to run on", "sim.run_pause", "space"),
    ("20-playground.md", "`z` zooms the views", "view.zoom", "z"),
    ("20-playground.md", "`m`: the helpdesk", "playground.helpdesk", "m"),
    ("20-playground.md", "`l`: a mixture of experts", "playground.model", "l"),
]


def test_the_lessons_name_the_keys_keys_py_binds():
    """The lessons are written text (steps imports no part of the app): each key they name is
    listed here with what it does, and keys.py must bind it so."""
    lessons = ROOT / "steps" / "lessons"
    for lesson, words, key_id, key in LESSON_KEYS:
        assert words in (lessons / lesson).read_text(encoding="utf-8"), (lesson, words)
        assert keys.shown(key_id) == key, f"{lesson}: {words!r}, but keys.py binds {keys.shown(key_id)}"
    tokens = key_tokens()
    listed = {(lesson, key) for lesson, _, _, key in LESSON_KEYS}
    for path in sorted(lessons.glob("*.md")):
        named = {(path.name, key) for key, _ in mentions(path.read_text(encoding="utf-8")) if key in tokens}
        assert named <= listed, f"{path.name} names a key LESSON_KEYS does not list: {named - listed}"


@pytest.fixture
def rebound(monkeypatch):
    """keys.py's keys bound elsewhere (the table only: the app's bindings stay as they were, so a
    test presses the usual keys and reads the texts)."""
    elsewhere = {"sim.reset": "x", "app.quit": "k", "step.contents": "j", "answer.new_question": "ctrl+y",
                 "playground.server": "u", "playground.calibrate": "i", "playground.helpdesk": "a",
                 "playground.save": "e", "playground.load": "y"}
    for key_id, key in elsewhere.items():
        monkeypatch.setitem(keys.BY_ID, key_id, dataclasses.replace(keys.BY_ID[key_id], keys=key))
    return elsewhere


def test_the_status_line_the_too_small_screen_and_the_playground_name_the_keys_bound(rebound):
    from batchtui.activity_kinds import playground_md
    from batchtui.screens.too_small import too_small_message
    from batchtui.serve.tui import status_text
    from batchtui.widgets.sim_status import status_line

    sim = SimpleNamespace(behind=False, running=False, speed=1.0, time_scale=1.0)
    line, short = status_line(sim, SimpleNamespace(finished=True, time=12.5, iteration=300), " | ")
    assert line.startswith("finished (x resets)") and short.startswith("finished (x resets)")
    assert too_small_message(40, 10).endswith("(k quits)")
    pacer = SimpleNamespace(active={}, aborted=0, sim_now=lambda: 2.0)
    assert status_text("batchtui serve: ...", pacer, SimpleNamespace(queue_len=0, time=1.0)).endswith("(k quits)")
    assert "`a` sets the traffic" in playground_md() and "`a` again" in playground_md()
    assert "`e` writes" in playground_md() and "`y` opens" in playground_md()


async def test_what_the_tutorial_says_names_the_keys_bound(make_app, rebound):
    from batchtui.widgets.activities.drill import DrillView
    from batchtui.widgets.notice_line import NoticeLine

    app = make_app(shared_steps.lessons(), start_step=2)  # a drill
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+d")  # the worked answer, and how to get another question
        feedback = str(app.screen.query_one(DrillView).query_one("#drill-feedback").render())
        assert feedback == "^y asks a new question."
        await pilot.press("escape", "g", "f")  # (the lesson has the keys) the playground; calibrate
        await pilot.pause()
        assert app.screen.query_one(NoticeLine).message == (
            "Nothing measured yet: u drives a server with this traffic, then i calibrates to it.")
        await pilot.press("n")  # past the last step
        await pilot.pause()
        assert app.screen.query_one(NoticeLine).message.endswith(" j opens the table of contents.")
