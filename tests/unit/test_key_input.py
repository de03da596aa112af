"""A lone Esc is answered once its escape delay is up: the input thread waits no longer than the
parser's deadline for a held Esc (`batchtui/key_input.py`); escape sequences read as before, and
Esc and a key typed right after it are both keys.
(How soon, in milliseconds, is `benchmarks/top_speed_keys.py`'s to measure.)"""

from __future__ import annotations

import pytest
from textual import constants

from batchtui.key_input import IDLE_WAIT, EscapeParser, KeysDriver, driver_for


def keys(events) -> list[str]:
    return [event.key for event in events if hasattr(event, "key")]


def test_a_held_esc_shortens_the_wait_to_its_delay_and_other_input_does_not():
    parser = EscapeParser()
    assert parser.wait(IDLE_WAIT) == IDLE_WAIT
    assert keys(parser.feed("a")) == ["a"] and parser.wait(IDLE_WAIT) == IDLE_WAIT
    assert keys(parser.feed("\x1b")) == []  # held: an arrow's first byte, or the Esc key
    assert 0 < parser.wait(10.0) <= constants.ESCAPE_DELAY
    assert parser.wait(0.001) == 0.001


@pytest.mark.parametrize("text, expected", [("\x1b[A", ["up"]), ("\x1bOP", ["f1"]), ("\x1b[Z", ["shift+tab"])])
def test_escape_sequences_read_as_one_key_and_release_the_wait(text, expected):
    parser = EscapeParser()
    got = []
    for character in text:  # byte by byte, as a slow link may deliver them
        got += keys(parser.feed(character))
    assert got == expected and parser.wait(IDLE_WAIT) == IDLE_WAIT


def test_the_esc_key_comes_out_once_its_delay_is_up(monkeypatch):
    import batchtui.key_input as key_input
    from textual import _parser

    now = [1000.0]
    monkeypatch.setattr(key_input, "monotonic", lambda: now[0])
    monkeypatch.setattr(_parser, "get_time", lambda: now[0])
    parser = EscapeParser()
    assert keys(parser.feed("\x1b")) == []
    assert parser.wait(10.0) == pytest.approx(constants.ESCAPE_DELAY)
    assert keys(parser.tick()) == []
    now[0] += constants.ESCAPE_DELAY
    assert parser.wait(IDLE_WAIT) == 0.0
    assert keys(parser.tick()) == ["escape"] and parser.wait(IDLE_WAIT) == IDLE_WAIT


@pytest.mark.parametrize("text, expected", [
    ("\x1bn", ["escape", "n"]), ("?\x1b?", ["question_mark", "escape", "question_mark"]),
    ("\x1bb", ["escape", "b"]), ("\x1bf", ["escape", "f"]), ("\x1b1", ["escape", "1"]),
    ("\x1b\x7f", ["escape", "backspace"]), ("\x1b\t", ["escape", "tab"]), ("\x1b=", ["escape", "equals_sign"]),
    ("c\x1bc", ["c", "escape", "c"]), ("\x1b\x1b[A", ["escape", "up"]),
])
def test_esc_and_the_key_typed_right_after_it_are_both_keys(text, expected):
    """In one read (or within the escape delay), Textual read Esc and a key as alt+key, or as
    another key (Esc ? as ?, Esc b as ctrl+left, Esc 1 as "¡"): the Esc was lost. Each is the
    Esc key and the key, at once, without waiting for the delay."""
    assert keys(EscapeParser().feed(text)) == expected


@pytest.mark.parametrize("start", ["[", "O"])
def test_esc_and_a_sequence_start_wait_for_the_rest(monkeypatch, start):
    """Esc [ and Esc O begin arrows and function keys: held until the delay says they are keys."""
    import batchtui.key_input as key_input
    from textual import _parser

    now = [1000.0]
    monkeypatch.setattr(key_input, "monotonic", lambda: now[0])
    monkeypatch.setattr(_parser, "get_time", lambda: now[0])
    parser = EscapeParser()
    assert keys(parser.feed("\x1b" + start)) == []
    now[0] += constants.ESCAPE_DELAY
    assert keys(parser.tick()) == ["escape", "left_square_bracket" if start == "[" else "O"]


def test_the_app_reads_a_terminal_through_it_and_keeps_other_drivers():
    from textual.drivers.headless_driver import HeadlessDriver
    from textual.drivers.linux_driver import LinuxDriver

    assert driver_for(LinuxDriver) is KeysDriver and issubclass(KeysDriver, LinuxDriver)
    assert driver_for(HeadlessDriver) is HeadlessDriver
