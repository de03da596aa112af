"""The terminal's keys, read so that a lone Esc is answered within its escape delay.

Textual's parser holds an Esc for the escape delay (`tui.ESCAPE_DELAY_MS`, 25 ms): more bytes in
that time make it an escape sequence (an arrow, a mouse report) or alt+key; none make it the Esc
key. But the Linux driver's input thread asks the parser whether that time is up only when its
wait for input ends, and it waits up to 0.1 s: a lone Esc took 112-207 ms to answer, paused.

`EscapeParser` says how long the input may wait before a held sequence's time is up, and
`KeysDriver` (the Linux driver, its input thread written here) waits no longer than that, so a
lone Esc reaches the app once its escape delay has passed. Escape sequences read as before: the
same parser reads them, with the same delay.

Esc and the key typed right after it are two keys. Textual reads Esc and a key that came within
the escape delay (or in the same read) as one key: alt+key, or, for a few, another key
altogether, as a Mac's option key would type them: Esc ? became ?, Esc b ctrl+left, Esc 1 "¡",
Esc Backspace ctrl+w: the Esc was lost. batchtui binds no alt key, so `EscapeParser` reads every
such pair as the Esc key and then the key; only the bytes that begin a terminal's sequences
(`SEQUENCE_STARTS`: an arrow's `[`, F1's `O`, a report's `]` or `P`) keep the parser waiting
for the rest.
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder
from time import monotonic

from textual import events
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

from . import typed_ahead

IDLE_WAIT = 0.1
"""Seconds the input thread waits for bytes when nothing is held (it then checks whether the
app is stopping)."""
READ_SIZE = 4096


SEQUENCE_STARTS = frozenset("[O]P_^\\")
"""What follows Esc at the start of a sequence a terminal sends (CSI, SS3, OSC, DCS, APC, PM,
ST): Esc and one of these wait for the rest; Esc and anything else are two keys."""


class EscapeParser(XTermParser):
    """Textual's terminal parser, saying how long it may wait for more input, and reading Esc
    and a key after it as both keys."""

    def _sequence_to_key_events(self, sequence: str, alt: bool = False):
        # Textual's hook from a sequence to its keys: with `alt`, a key that came right after
        # an Esc; or the sequence itself is Esc and one key (alt+key, or Textual's own reading
        # of a few such pairs as other keys).
        if not alt and len(sequence) == 2 and sequence[0] == "\x1b" and sequence[1] not in SEQUENCE_STARTS \
                and sequence[1] != "\x1b":
            alt, sequence = True, sequence[1]
        if alt:
            yield events.Key("escape", "\x1b")
        yield from super()._sequence_to_key_events(sequence)

    def wait(self, longest: float) -> float:
        """Seconds until the sequence it holds (a lone Esc, so far) must be settled without more
        bytes, at most `longest`; `longest` when it holds nothing."""
        deadline = self._timeout_time  # (Textual's Parser sets it when a read may time out)
        if deadline is None:
            return longest
        return min(longest, max(0.0, deadline - monotonic()))


class KeysDriver(LinuxDriver):
    """Textual's Linux driver with an input thread that wakes when a held Esc's delay is up."""

    def start_application_mode(self) -> None:
        # The terminal as the shell left it first, so that it is what Textual puts back at the
        # end; the keys typed while the app started wait, as typed, for the input thread.
        typed_ahead.release()
        super().start_application_mode()

    def run_input_thread(self) -> None:
        parser = EscapeParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        fd = self.fileno
        selector = selectors.SelectSelector()
        selector.register(fd, selectors.EVENT_READ)
        try:
            stopping = False
            while not stopping:
                stopping = self.exit_event.is_set()  # one last read once asked to stop
                ready = selector.select(parser.wait(IDLE_WAIT))
                if ready:
                    data = decode(os.read(fd, READ_SIZE), final=stopping)
                    if data:  # (nothing: the input is a pipe that ended)
                        for event in parser.feed(data):
                            self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
            try:
                for _ in parser.feed(""):  # the end of input: a held sequence is dropped
                    pass
            except Exception:  # noqa: BLE001 -- Textual's parser may refuse a cut sequence at the end
                pass


def driver_for(chosen):
    """The driver to run the app with, given the one Textual chose: ours in place of the Linux
    driver, any other (textual-serve's, a test's) as chosen."""
    return KeysDriver if chosen is LinuxDriver else chosen
