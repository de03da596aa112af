"""Every key the tutorial answers to, in one table.

Each entry has a stable id (users can remap it with Textual's keymap, tests refer to it), the keys,
the action it runs, the short label the footer shows and the line the `?` help screen shows;
`HANDLERS` names the part of the tutorial screen that runs each of the screen's actions.
Plain letters do nothing while a text input has focus, so the things a learner needs while typing
an answer also have a chord (`ctrl+...`) bound with priority.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True, slots=True)
class Key:
    id: str
    keys: str
    """Textual key names, comma separated; the first is the one shown."""
    action: str
    label: str
    """A word or two for the footer."""
    help: str
    """One line for the help screen."""
    group: str
    footer: bool = True
    priority: bool = False
    """Works even while a text input has focus (chords only)."""
    bind: bool = True
    """False for keys a widget handles itself; listed here so the help screen is complete."""


GROUPS = ("Steps", "Simulation", "Dials", "Answers", "While typing", "App")

KEYS: tuple[Key, ...] = (
    Key("step.next", "n,right", "next_step", "next", "Next step (→ only while the lesson has the keys)", "Steps"),
    Key("step.previous", "p,left", "previous_step", "back", "Previous step (← likewise)", "Steps"),
    Key("step.contents", "t", "contents", "steps", "Table of contents: jump to any step", "Steps"),
    Key("step.hint", "h", "hint", "hint", "Show the next hint for this step", "Steps"),
    Key("step.glossary", "d", "app.glossary", "terms",
        "The glossary: every term, what it means, the step that teaches it", "Steps", footer=False),
    Key("step.cheat_sheet", "c", "go_to_step(19)", "cheat", "Cheat sheet (step 19)", "Steps", footer=False),
    Key("step.playground", "g", "go_to_step(20)", "play", "Playground (step 20)", "Steps", footer=False),
    Key("lesson.scroll", "up,down,pageup,pagedown,home,end", "", "scroll",
        "On the lesson (marked by the bar on its left): scroll the text", "Steps", bind=False),
    Key("sim.run_pause", "space", "run_pause", "run", "Run or pause the simulation", "Simulation"),
    Key("sim.single_iteration", "full_stop", "single_iteration", "1 iter", "Advance exactly one engine iteration (pauses first)", "Simulation"),
    Key("sim.faster", "plus,equals_sign", "faster", "faster", "Run the simulation faster", "Simulation", footer=False),
    Key("sim.slower", "minus", "slower", "slower", "Run the simulation slower", "Simulation", footer=False),
    Key("sim.reset", "r", "reset_scenario", "reset", "Reset the scenario to the step's start", "Simulation", footer=False),
    Key("sim.pin", "b", "pin", "pin", "Pin this run's metrics as \"before\" beside the live \"now\" (again: unpin)", "Simulation"),
    Key("view.zoom", "z", "zoom", "zoom", "Zoom the simulation to the whole screen, and back", "Simulation"),
    Key("view.next_page", "v", "next_views", "views", "The step's other views, when they do not all fit", "Simulation"),
    Key("playground.save", "w", "save_scenario", "save", "Playground: write the scenario to a file", "Simulation", footer=False),
    Key("playground.load", "o", "load_scenario", "open", "Playground: open the saved scenario", "Simulation", footer=False),
    Key("playground.helpdesk", "m", "helpdesk_traffic", "multi-turn",
        "Playground: the multi-turn helpdesk's traffic; again: back to single turns", "Simulation", footer=False),
    Key("playground.model", "l", "pick_model", "model",
        "Playground: a model (mixtures of experts too) on the GPUs it needs, and speculative decoding",
        "Simulation", footer=False),
    Key("playground.server", "s", "live('server')", "server",
        "Playground: drive a real server (vLLM) with this traffic, measured beside simulated; again: disconnect",
        "Simulation", footer=False),
    Key("playground.calibrate", "f", "live('calibrate')", "fit",
        "Playground: calibrate the simulator to what the server measured, and run on the fitted profile",
        "Simulation", footer=False),
    Key("dial.reach", "tab,shift+tab", "", "dials", "Move between the lesson, the answer box and the dials", "Dials", bind=False),
    Key("dial.adjust", "left,right", "", "turn", "On a dial: one notch down or up (shift or PgDn/PgUp: ten)", "Dials", bind=False),
    Key("dial.move", "up,down", "", "dial", "On a dial: the dial above or below", "Dials", bind=False),
    Key("dial.ends", "home,end", "", "ends", "On a dial: its lowest or highest value", "Dials", bind=False),
    Key("dial.type", "enter", "", "type", "On a dial: type an exact value, Enter to apply, Escape to cancel", "Dials", bind=False),
    Key("focus.lesson", "escape", "focus_lesson", "lesson", "Back to the lesson (from a dial or the answer box)", "Dials"),
    Key("answer.choose", "1,2,3,4,5,6,7,8,9", "", "choose", "Pick an answer by its number", "Answers", bind=False),
    Key("answer.submit", "enter", "", "check", "In the answer box: check the answer", "Answers", bind=False),
    Key("answer.give_up", "ctrl+d", "give_up", "answer",
        "Show the worked answer; on a break-it, \"show me\": set the dials that break it", "Answers", priority=True),
    Key("answer.new_question", "ctrl+r", "new_question", "new q", "Another question of the same kind", "Answers", priority=True),
    Key("answer.leave", "escape", "", "leave", "Leave the answer box (plain letter keys work again)", "Answers", bind=False),
    Key("chord.next", "ctrl+n", "next_step", "next", "Next step, even while typing", "While typing", priority=True),
    Key("chord.previous", "ctrl+p", "previous_step", "back", "Previous step, even while typing", "While typing", priority=True),
    Key("chord.contents", "ctrl+t", "contents", "steps", "Table of contents, even while typing", "While typing", priority=True),
    Key("chord.hint", "ctrl+o", "hint", "hint", "Next hint, even while typing", "While typing", priority=True),
    Key("chord.help", "f1", "app.help", "help", "This help, even while typing", "While typing", priority=True),
    Key("chord.glossary", "ctrl+g", "app.glossary", "terms", "The glossary, even while typing", "While typing",
        footer=False, priority=True),
    Key("chord.quit", "ctrl+q", "app.quit", "quit", "Quit, even while typing", "While typing", priority=True),
    Key("app.help", "question_mark", "app.help", "help", "This help: the screen's parts, then every key", "App"),
    Key("app.quit", "q", "app.quit", "quit", "Quit (progress is saved)", "App"),
)

BY_ID = {key.id: key for key in KEYS}


def bindings(*groups: str) -> list[Binding]:
    """Textual bindings for the table's entries (optionally only some groups)."""
    return [binding(key.id) for key in KEYS if key.bind and (not groups or key.group in groups)]


def binding(key_id: str) -> Binding:
    """The Textual binding of one entry (a screen or app that binds only some of the table's keys,
    such as `batchtui serve --tui`'s quit)."""
    key = BY_ID[key_id]
    return Binding(key.keys, key.action, key.label, show=key.footer, id=key.id, priority=key.priority)


HANDLERS = {
    "next_step": "navigation.step_by(1)", "previous_step": "navigation.step_by(-1)",
    "go_to_step": "navigation.step_number", "contents": "navigation.contents",
    "hint": "body.hint", "zoom": "body.toggle_zoom", "next_views": "body.next_views",
    "focus_lesson": "body.focus_lesson",
    "run_pause": "run.run_pause", "single_iteration": "run.single_iteration", "faster": "run.faster",
    "slower": "run.faster(False)", "pin": "run.pin",
    "choose": "lesson.activity.choose", "give_up": "lesson.give_up", "new_question": "lesson.new_question",
    "save_scenario": "playground.save", "load_scenario": "playground.load",
    "helpdesk_traffic": "playground.helpdesk_traffic", "pick_model": "playground.pick_model", "live": "live.act",
}
"""The part of the tutorial screen that runs each of its actions (by the action's name, as the
table's `action` names it) and its method, with fixed arguments first (`navigation.step_by(1)`);
the action's own parameters follow them (`go_to_step(19)`: `navigation.step_number(19)`). An
action not here is the screen's own `action_` method (`reset_scenario`) or the app's."""


def delegate(screen_class):
    """Give `screen_class` an `action_<name>` for each of `HANDLERS` (the action's parameters
    after the handler's own; what it returns, awaited if need be, goes to the screen's `acted`);
    returns the class."""
    for name, handler in HANDLERS.items():
        setattr(screen_class, f"action_{name}", _handler(handler))
    return screen_class


def _handler(handler: str):
    path, method, fixed = parse_handler(handler)

    async def action(screen, *parameters):
        part = screen
        for name in path:
            part = getattr(part, name)
        result = getattr(part, method)(*fixed, *parameters)
        screen.acted(await result if inspect.isawaitable(result) else result)

    action.__doc__ = f"Runs `{handler}` (keys.py)."
    return action


def parse_handler(handler: str) -> tuple[tuple[str, ...], str, tuple]:
    """`lesson.activity.choose` -> the attributes to follow from the screen, the method and the
    fixed arguments: (("lesson", "activity"), "choose", ())."""
    from textual.actions import parse

    target, method, fixed = parse(handler)
    return tuple(target.split(".")) if target else (), method, fixed


_KEY_NAMES = {
    "space": "space", "full_stop": ".", "plus": "+", "equals_sign": "=", "minus": "-",
    "question_mark": "?", "right": "→", "left": "←", "up": "↑", "down": "↓", "enter": "enter",
    "escape": "esc", "tab": "tab", "shift+tab": "shift+tab", "pageup": "PgUp", "pagedown": "PgDn",
    "home": "Home", "end": "End",
}
_ASCII_ARROWS = {"→": "right", "←": "left", "↑": "up", "↓": "down"}


def display(key_name: str, ascii_only: bool = False) -> str:
    """How a Textual key name is written on screen: `full_stop` -> `.`, `ctrl+n` -> `^n`."""
    shown = _KEY_NAMES.get(key_name)
    if shown is None:
        shown = "^" + key_name[5:] if key_name.startswith("ctrl+") else key_name
    return _ASCII_ARROWS.get(shown, shown) if ascii_only else shown


_ARROW_KEYS = {"left", "right", "up", "down"}


def display_keys(key: Key, ascii_only: bool = False, first_only: bool = False) -> str:
    """The keys as shown. A pair of arrows reads as one (`←→`); `first_only` keeps the footer
    short (`n` rather than `n/→`)."""
    names = key.keys.split(",")
    if len(names) > 2 and all(n.isdigit() for n in names):
        return f"{names[0]}-{names[-1]}"
    if set(names) <= _ARROW_KEYS:
        return ("/" if ascii_only else "").join(display(n, ascii_only) for n in names)
    if first_only:
        names = names[:1]
    return "/".join(display(n, ascii_only) for n in names)


def shown(key_id: str, ascii_only: bool = False) -> str:
    """The key of `key_id` as a text names it ("r resets"): its first key, as the footer shows
    it (`r`, `^r`). A text that names a key takes it from here, so a key bound elsewhere in this
    table is named so everywhere (tests/app/test_key_texts.py)."""
    return display_keys(BY_ID[key_id], ascii_only, first_only=True)
