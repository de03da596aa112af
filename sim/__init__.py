"""batchtui's simulator core: an iteration-level model of one LLM serving engine.

Pure Python and numpy, deterministic for a seed, and free of any UI import.
"""

# The compiled core or the pure modules (sim.native), decided before any of them is imported.
from . import native

native.choose()

# The table of dials first: it declares the paths a message's `{path}` may name (sim.dial_paths),
# so an error is spelled alike whichever module of the package was imported.
from . import dials  # noqa: E402,F401
