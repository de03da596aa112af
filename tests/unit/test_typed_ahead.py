"""Keys typed while `batchtui` starts reach it as typed (`batchtui.typed_ahead`): from the
command's first import until Textual takes the terminal, the terminal's line discipline neither
eats control keys (ctrl+r reprints, ctrl+u erases the line, ctrl+q is flow control...) nor
echoes them; and the terminal is put back exactly as it was."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import os, termios
before = termios.tcgetattr(0)
import batchtui.start
held = termios.tcgetattr(0)
os.write(1, b"held\n")
keys = b""
while not keys.endswith((b"\x11", b"\n")):
    keys += os.read(0, 64)
from batchtui import typed_ahead
typed_ahead.release()
flags = [bool(held[3] & termios.ICANON), bool(held[3] & termios.ECHO), bool(held[0] & termios.IXON)]
os.write(1, repr((keys, termios.tcgetattr(0) == before, flags)).encode() + b"\n")
"""

TYPED = b"\t9\x12\x155\x17\x16\r\x04\x11"
"""Tab 9 ctrl+r ctrl+u 5 ctrl+w ctrl+v Enter ctrl+d ctrl+q, as a terminal sends them."""


def read_until(fd: int, end: bytes, timeout: float = 30.0) -> bytes:
    got, deadline = b"", time.monotonic() + timeout
    while end not in got and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                got += os.read(fd, 4096)
            except OSError:
                break
    return got


def test_keys_typed_while_it_starts_wait_as_typed_and_the_terminal_is_put_back():
    master, slave = os.openpty()
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=slave, stdout=slave, stderr=subprocess.PIPE,
                             cwd=ROOT, start_new_session=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    os.close(slave)
    try:
        assert b"held" in read_until(master, b"held\r\n")
        os.write(master, TYPED)
        said = read_until(master, b")\r\n").split(b"held\r\n")[-1]
    finally:
        child.kill()
        child.wait(timeout=30)
        os.close(master)
    assert said.strip() == repr((TYPED, True, [False, False, False])).encode(), (said, child.stderr.read())
