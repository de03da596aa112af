"""The manual's generated tables, filled in when the site is built (a mkdocs hook, mkdocs.yml).

A page asks for a table with a marker on a line of its own:

    <!-- table: vllm-flags -->             every vllm serve / vllm bench serve flag (batchtui.cli.vllm_flags)
    <!-- table: request-fields -->         every field of vLLM's requests (batchtui.serve.fields)
    <!-- table: dials -->                  the simulator's dials (sim.dials), as a scenario file names them
    <!-- table: flags sim engine -->       the groups of a command's parser whose titles start so
    <!-- table: every-flag -->             every command's flags, from its own parser
    <!-- table: app-flags -->              the flags of `batchtui` itself (the tutorial)

and `render(markdown)` gives the page with each marker replaced by its table, generated from the
code's own tables (the argparse parsers batchtui.cli builds, sim.dials, the vLLM flag rows, the
request-field table), so no flag table is typed. An unknown marker stops the build.
`python tools/docs_tables.py PAGE.md` prints a page as the site shows it.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
MARKER = re.compile(r"^<!-- table: ([^>]*?) -->$", re.M)
OTHER_VLLM_FLAGS = "other vllm serve"  # the group of flags vllm_flags adds: the vLLM flag table lists them


def _subparser(command: str) -> argparse.ArgumentParser:
    from batchtui.cli.parser import build_parser

    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command")  # noqa: SLF001 (argparse's own)
    return sub.choices[command]


def _groups(command: str) -> list[argparse._ArgumentGroup]:
    """A command's argument groups that hold flags, in the order --help shows them."""
    return [g for g in _subparser(command)._action_groups  # noqa: SLF001 (argparse's own)
            if g.title.startswith(OTHER_VLLM_FLAGS) and g._group_actions  # noqa: SLF001
            or any(a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)  # noqa: SLF001
                   for a in g._group_actions)]  # noqa: SLF001


def _cell(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|").replace("*", "\\*")


def _flag(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    if isinstance(action, argparse.BooleanOptionalAction):
        return ", ".join(f"`--[no-]{s[2:]}`" for s in action.option_strings if not s.startswith("--no-"))
    if action.nargs == 0:
        return ", ".join(f"`{s}`" for s in action.option_strings)
    metavar = action.metavar or action.dest.upper()
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    if action.choices is not None and action.metavar is None:
        metavar = "{" + ",".join(map(str, action.choices)) + "}"
    return ", ".join(f"`{s} {metavar}`" for s in action.option_strings)


def _help(action: argparse.Action, prog: str) -> str:
    """The flag's help as --help prints it (its %(default)s and the like filled in)."""
    values = {key: value for key, value in vars(action).items() if value is not argparse.SUPPRESS}
    values["prog"] = prog
    if values.get("choices") is not None:
        values["choices"] = ", ".join(map(str, values["choices"]))
    return (action.help or "") % values


def group_table(group: argparse._ArgumentGroup, prog: str) -> str:
    lines = ["| flag | what it does |", "|---|---|"]
    for action in group._group_actions:  # noqa: SLF001 (argparse's own)
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):  # noqa: SLF001
            continue
        lines.append(f"| {_flag(action)} | {_cell(_help(action, prog))} |")
    return "\n".join(lines)


def _title(group: argparse._ArgumentGroup) -> str:
    return {"options": "flags", "positional arguments": "arguments"}.get(group.title, group.title)


def command_groups(command: str, start: str = "") -> str:
    """The tables of a command's groups whose titles start with `start` (all of them for "")."""
    groups = [g for g in _groups(command) if _title(g).startswith(start)]
    if not groups:
        raise ValueError(f"batchtui {command} has no group of flags titled {start!r}...")
    prog = f"batchtui {command}"
    if len(groups) == 1:
        return group_table(groups[0], prog)
    return "\n\n".join(f"**{_cell(_title(g))}**\n\n{group_table(g, prog)}" for g in groups)


def every_flag() -> str:
    """Every command's flags, a section a command; a group already shown for an earlier command
    is named, not repeated."""
    from batchtui.cli.parser import HELP, SUBCOMMANDS

    shown: dict[tuple, str] = {}
    out = []
    for command in SUBCOMMANDS:
        prog = f"batchtui {command}"
        out += [f"## `{prog}`", "", _cell(HELP[command]) + ".", ""]
        for group in _groups(command):
            title = _cell(_title(group))
            if group.title.startswith(OTHER_VLLM_FLAGS):
                out += [f"**{title}**: every one is a row of the [vLLM flag table](vllm-flags.md#every-flag).", ""]
                continue
            table = group_table(group, prog)
            key = (group.title, table)
            if key in shown:
                out += [f"**{title}**: as for [`{shown[key]}`](#batchtui-{shown[key].split()[-1]}).", ""]
                continue
            shown[key] = prog
            out += [f"**{title}**", "", table, ""]
    return "\n".join(out).rstrip("\n")


def app_flags() -> str:
    """The flags of `batchtui` with no command: the tutorial's."""
    from batchtui.cli.parser import build_parser

    parser = build_parser()
    lines = ["| flag | what it does |", "|---|---|"]
    for action in parser._actions:  # noqa: SLF001 (argparse's own)
        if action.option_strings and not isinstance(action, argparse._HelpAction) \
                and action.help != argparse.SUPPRESS:  # noqa: SLF001
            lines.append(f"| {_flag(action)} | {_cell(_help(action, 'batchtui'))} |")
    return "\n".join(lines)


def dials() -> str:
    """The simulator's dials: a scenario file's keys, the playground's labels, the flags."""
    from sim.dials import DIALS

    lines = ["| scenario key | in the app | flag | takes | what it is |", "|---|---|---|---|---|"]
    for d in DIALS:
        flag = f"`{d.flag}`" if d.flag else ""
        takes = _cell(d.allowed + (f" ({d.unit})" if d.unit else ""))
        lines.append(f"| `{d.path}` | {_cell(d.label)} | {flag} | {takes} | {_cell(d.help)} |")
    return "\n".join(lines)


def table(name: str) -> str:
    words = name.split()
    if name == "vllm-flags":
        from batchtui.cli.vllm_flags import markdown_table
        return markdown_table()
    if name == "request-fields":
        from batchtui.serve.fields import markdown_table
        return markdown_table()
    if name == "dials":
        return dials()
    if name == "every-flag":
        return every_flag()
    if name == "app-flags":
        return app_flags()
    if words[0] == "flags" and len(words) >= 2:
        return command_groups(words[1], " ".join(words[2:]))
    raise ValueError(f"unknown table {name!r}: see tools/docs_tables.py")


def render(markdown: str) -> str:
    """A page with each table marker replaced by its table."""
    return MARKER.sub(lambda m: table(m.group(1).strip()), markdown)


def page(name: str) -> str:
    """A page of docs/ as the site shows it (its tables generated): what tests read."""
    return render((DOCS / name).read_text(encoding="utf-8"))


def write_again(path: Path, new: str) -> None:
    """A page (or the README) with its generated parts written again, when they changed: to a
    temporary file beside it, renamed into place; says which."""
    if new == path.read_text(encoding="utf-8"):
        print(f"{path.name} is up to date.")
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".md", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(new)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"{path.name} written again: read the diff before committing.")


def on_page_markdown(markdown: str, **_) -> str:
    """mkdocs' hook: the page's Markdown before it is converted."""
    return render(markdown)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as page:
        print(render(page.read()), end="")
