"""The tutorial served in a web page (issue 22, item 6; issue 38, item 6): `batchtui web` binds
this machine only unless asked (the rule `batchtui serve` follows too), and says what asking
exposes; a served session's file prompts stay in the state folder."""

from __future__ import annotations

import sys

import pytest

import steps
from batchtui.cli import main
from batchtui.widgets.notice_line import NoticeLine


@pytest.fixture
def server(monkeypatch):
    """`batchtui web`'s server, recorded instead of started: (command line, host, port, sessions).
    The real one is driven in test_web_sessions.py."""
    from batchtui.cli import cmd_web

    started = []

    async def serve(args, binding):
        started.append(("-m batchtui", binding.host, args.port, args.max_sessions))
        return 0

    monkeypatch.setattr(cmd_web, "_serve", serve)
    return started


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "192.0.2.7"])
def test_an_address_others_reach_is_refused_without_expose(server, capsys, host):
    assert main(["web", "--host", host]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "argument --host" in err and "--expose" in err and "no login" in err
    assert server == []


@pytest.mark.parametrize(("host", "bound"), [("127.0.0.1", "127.0.0.1"), ("localhost", "localhost"),
                                             ("::1", "::1"), ("[::1]", "::1"), ("127.0.0.2", "127.0.0.2")])
def test_loopback_is_served_quietly(server, capsys, host, bound):
    assert main(["web", "--host", host, "--port", "8123"]) == 0
    _, err = capsys.readouterr()
    assert err == "" and len(server) == 1
    command, host_bound, port, sessions = server[0]
    assert host_bound == bound and port == 8123 and sessions == 4


@pytest.mark.parametrize("command", ["web", "serve"])
def test_a_port_is_0_to_65535_and_0_is_any_free_one(server, capsys, command):
    for port in ("65536", "-1", "http"):
        assert main([command, "--port", port]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "argument --port: expected a port from 0 to 65535 (0 = any free one)" in err
    assert server == []
    if command == "web":
        assert main(["web", "--port", "0"]) == 0 and server[0][2] == 0


def test_exposing_any_free_port_says_the_port_comes_below(server, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["web", "--host", "0.0.0.0", "--expose", "--port", "0"]) == 0
    err = capsys.readouterr().err
    assert "serving on 0.0.0.0 (on a free port, said below) to anyone" in err and ":0" not in err


def test_expose_serves_and_says_what_it_exposes(server, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert main(["web", "--host", "0.0.0.0", "--expose", "--max-sessions", "2"]) == 0
    _, err = capsys.readouterr()
    assert server and server[0][1] == "0.0.0.0" and server[0][3] == 2
    assert "anyone who can reach that port" in err and "no login" in err and str(tmp_path / "batchtui") in err


def test_the_default_is_loopback(server, capsys):
    assert main(["web"]) == 0 and server[0][1] == "127.0.0.1"


def test_without_textual_serve_it_says_how_to_install_it_for_this_interpreter(monkeypatch, capsys):
    """batchtui is installed from its folder: the hint names the package for the interpreter that
    runs batchtui, not `batchtui[serve]`, which no package index holds."""
    monkeypatch.setitem(sys.modules, "textual_serve", None)  # an import of it fails
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)
    assert main(["web"]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and f"{sys.executable} -m pip install textual-serve" in err
    assert "batchtui[serve]" not in err


def test_serve_and_web_refuse_an_exposed_address_by_one_rule(capsys):
    """One rule for both commands (`serving.bind`): the same refusal, each saying what it lacks."""
    lines = []
    for command, lacks in (("serve", "has no API key"), ("web", "has no login")):
        assert main([command, "--host", "0.0.0.0"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and lacks in err
        lines.append(err.replace(lacks, "..."))
    assert lines[0].replace("simulated server", "X") == lines[1].replace("served tutorial", "X")


@pytest.fixture(scope="module")
def lessons():
    return steps.open_lessons()


@pytest.mark.parametrize("key", ["w", "o"])
async def test_served_file_prompts_stay_in_the_state_folder(make_app, lessons, state_dir, tmp_path, key):
    outside = tmp_path / "elsewhere.toml"
    app = make_app(list(lessons), start_step=20, served=True)
    async with app.run_test(size=(80, 24)) as pilot:
        tutorial = app.screen
        for name in (str(outside), "../escape.toml", str(state_dir / ".." / "x.toml")):
            await pilot.press(key)
            app.screen.query_one("#file-prompt-input").value = name
            await pilot.press("enter")
            await pilot.pause()
            status = str(app.screen.query_one("#file-prompt-status").render())
            assert "files stay in" in status, (name, status)
            await pilot.press("escape")
            await pilot.pause()
        assert not outside.exists() and not (state_dir.parent / "escape.toml").exists()
        if key == "w":  # a plain name is saved in the state folder
            await pilot.press("w")
            app.screen.query_one("#file-prompt-input").value = "mine.toml"
            await pilot.press("enter")
            await pilot.pause()
            assert (state_dir / "mine.toml").exists()
            assert "Saved the scenario" in tutorial.query_one(NoticeLine).message


async def test_unserved_file_prompts_write_where_asked(make_app, lessons, tmp_path):
    target = tmp_path / "elsewhere.toml"
    app = make_app(list(lessons), start_step=20)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("w")
        app.screen.query_one("#file-prompt-input").value = str(target)
        await pilot.press("enter")
        await pilot.pause()
    assert target.exists()
