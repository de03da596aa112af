"""The paths of the dials: what a `{path}` in a simulator message may name.

A message names a dial as `{path}` (`sim.errors`); only a dial's path is spelled, so braces around
anything else (a user's file name, a JSON key) stay as they are. The table of dials (`sim.dials`)
holds the paths and declares them here as it is built, and the package loads the table first
(`sim/__init__.py`), so every message is spelled with the whole table while the errors, which the
table imports, never import it back.
"""

from __future__ import annotations

PATHS: set[str] = set()
"""Every dial's path, declared by `sim.dials`."""


def declare(paths) -> None:
    """Add the paths of a table's dials (`sim.dials` does, once, as it is loaded)."""
    PATHS.update(paths)
