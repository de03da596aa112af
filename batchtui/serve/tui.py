"""`batchtui serve --tui`: the live engine on screen while outside traffic drives it.

The server runs in the app's own event loop (Textual's asyncio loop): the same `Pacer` and HTTP
application as without `--tui`. Ten times a second the views the playground draws — seats, KV
blocks, sparklines, metrics — get the engine's snapshot; a status line says where the server
listens and what it is serving. The tutorial's quit key (`keys.py`'s `app.quit`, `q`, bound from
the table and named on the status line from it), or Textual's ctrl+q, quits and stops the server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual.app import App, ComposeResult
from textual.widgets import Static

from batchtui import keys
from batchtui.widgets.kv_cache import KVCacheView
from batchtui.widgets.metrics import MetricsView
from batchtui.widgets.seats import SeatsView
from batchtui.widgets.sim_view import SimView
from batchtui.widgets.sparklines import SparklinesView

FPS = 10


class ServeApp(App):
    """The live view of a `batchtui serve` engine."""

    CSS = """
    #status { height: auto; padding: 0 1; }
    SimView { padding: 0 1; margin-top: 1; }
    """
    BINDINGS = [keys.binding("app.quit")]

    def __init__(self, start: Callable[[], Awaitable]) -> None:
        super().__init__()
        self.start = start
        self.served = None
        self.error: Exception | None = None
        self.line = ""

    def compose(self) -> ComposeResult:
        yield Static("starting...", id="status")
        yield SeatsView()
        yield KVCacheView()
        yield SparklinesView()
        yield MetricsView()

    async def on_mount(self) -> None:
        try:
            self.served = await self.start()
        except Exception as exc:  # (a UserError: printed once the screen is gone)
            self.error = exc
            self.exit()
            return
        self.line = self.served.line
        self.frame()
        self.set_interval(1 / FPS, self.frame)

    def frame(self) -> None:
        served = self.served
        if served is None:
            return
        pacer = served.pacer
        snapshot = pacer.engine.snapshot()
        for view in self.query(SimView):
            view.update_snapshot(snapshot)
        self.query_one("#status", Static).update(status_text(self.line, pacer, snapshot))

    async def on_unmount(self) -> None:
        if self.served is not None:
            await self.served.stop()
            self.served = None


def status_text(line: str, pacer, snapshot) -> str:
    """The status line: where the server listens, what is in flight, and the key that quits (as
    keys.py binds it)."""
    return (f"{line}\n{len(pacer.active)} requests in flight, {snapshot.queue_len} waiting, {pacer.aborted} "
            f"aborted; simulated time {max(snapshot.time, pacer.sim_now()):.1f} s   ({keys.shown('app.quit')} quits)")
