"""The tutorial served in a web page (textual-serve): who can reach it, and where it may write.

textual-serve has no login: whoever reaches the port gets a full session running as the server's
user. `batchtui web` therefore binds a loopback address unless `--expose` asks otherwise (and
then says what that exposes), and a served session's file prompts (the playground's `w` and `o`)
stay inside the state folder (`confine`).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

WEB_DRIVER = "textual.drivers.web_driver:WebDriver"
"""The driver textual-serve starts each page's app with (in TEXTUAL_DRIVER)."""


def served() -> bool:
    """This app runs in a web page through textual-serve."""
    return os.environ.get("TEXTUAL_DRIVER", "") == WEB_DRIVER


def loopback(host: str) -> bool:
    """Every address `host` names is a loopback one (127.0.0.0/8, ::1): only this machine reaches it.
    Raises OSError (socket.gaierror) when the name does not resolve."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def exposure(host: str, port: int, state_dir: Path) -> str:
    """What serving on a non-loopback address exposes, in one paragraph."""
    try:
        import pwd

        user = pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        user = "this user"
    return (f"batchtui: serving the tutorial on {host}:{port} to anyone who can reach that port, with no "
            f"login and no encryption: each page runs batchtui as {user} on this machine, and its file "
            f"prompts read and write scenario files in {state_dir}. Stop it with Ctrl-C.")


def confine(text: str, folder: Path) -> Path:
    """The file a served prompt names, inside `folder` (a relative name is taken there). Raises
    ValueError, in words for the learner, for anything that leads outside it."""
    name = Path(text)
    path = name if name.is_absolute() else folder / name
    real_folder = Path(os.path.realpath(folder))
    real = Path(os.path.realpath(path))
    if real != real_folder and real_folder not in real.parents:
        raise ValueError(f"In a browser, files stay in {folder}: give a file name there.")
    return path
