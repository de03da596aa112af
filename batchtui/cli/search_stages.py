"""How `batchtui search` runs its stages over an executor (`executors.py`: worker processes or
Ray): the tasks a worker runs (top-level functions, imported by name), the progress bar, and the
screen, the confirmation and the router checks, each recording every result in the journal as it
finishes. The command, its arguments and its report are `cmd_search`."""

from __future__ import annotations

import json

from sim import rate_plan
from sim import search as s

from .journal import Journal
from .setup import flag_message


# -- the tasks (top-level: pool workers and Ray import them) ---------------------------------------

# Every setting a task needs travels in it (workers import the modules afresh).
def screen_task(task: tuple) -> tuple:
    """(the point's screen, its `sim.search.ScreenProof` or None). `proofs` are the screens of
    its family finished when the task was sent (the pool and Ray pickle a task when they send it,
    so the list the search keeps adding to is read then): one that covers the point is its
    screen."""
    base, point, slo, settings, proofs = task
    return s.screen_proved(base, point, slo, settings["prompts"], settings["window"], settings["window_s"],
                           settings["precision"], flag_message, proofs)


def confirm_task(task: tuple) -> s.PointResult:
    base, point, slo, n, c = task
    return s.confirm_point(base, point, slo, n, c["seeds"], c["min_window"], c["min_window_s"], c["confirm_prompts"],
                           c["new_seeds"])


def router_task(task: tuple) -> s.PointResult:
    base, result, slo, peak_rate, headroom, r = task
    return s.router_point(base, result, slo, peak_rate, headroom, r["min_seconds"], r["min_per_replica"],
                          r["max_extra"])


def offline_task(task: tuple) -> s.PointResult:
    base, point, n = task
    return s.offline_point(base, point, n, flag_message)


# -- progress ------------------------------------------------------------------------------------------

class Progress:
    """Points done, running and left with an estimate, on stderr (Rich), when it is a terminal."""

    def __init__(self, show: bool) -> None:
        self.show = show
        self.bar = None

    def start(self, description: str, total: int) -> None:
        if not self.show:
            return
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)
        if self.bar is None:
            self.bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("done, {task.fields[running]} running, {task.fields[left]} left"),
                                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                                    console=Console(stderr=True), transient=True)
            self.bar.start()
        self.task = self.bar.add_task(description, total=total, running=0, left=total)

    def update(self, done: int, running: int, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done, running=running, left=total - done - running)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def run_stage(executor, func, todo: list, keys: list[str], done: dict, journal: Journal, progress: Progress,
              description: str, each=None) -> int:
    """Run `func` over the tasks not yet done, recording each result as it finishes. Returns how
    many ran. `each(answer)`: the result in a task's answer (the answer itself if not given)."""
    pending = [(k, t) for k, t in zip(keys, todo) if k not in done]
    if not pending:
        return 0
    progress.start(description, len(pending))
    count = 0
    for index, result in executor.imap_unordered(func, [t for _, t in pending]):
        key = pending[index][0]
        if each is not None:
            result = each(result)
        done[key] = result
        journal.add(key, result)
        count += 1
        progress.update(count, executor.running, len(pending))
    return count


# -- the stages --------------------------------------------------------------------------------------------

def screen_stage(executor, base, slo, settings: dict, points: list, keys: list[str], done: dict,
                 journal: Journal, progress: Progress) -> tuple[int, int]:
    """The screen: every point not yet done, the loosest caps first (`sim.search.loosest_first`),
    each task sent with its family's proofs so far (`sim.search.ScreenProof`): a point another's
    screen covers takes that screen without running it. Returns (points screened, of them taken
    from a proof)."""
    proofs: dict = {}  # family -> the proofs of its screens that ran, added to as they finish
    order = s.loosest_first(points)
    index = {p: i for i, p in enumerate(points)}
    taken = 0

    def each(answer: tuple) -> s.PointResult:
        nonlocal taken
        result, proof, proved = answer
        if proof is not None:
            proofs[s.family(result.point)].append(proof)
        taken += proved
        return result

    todo = [(base, p, slo, settings, proofs.setdefault(s.family(p), [])) for p in order]
    ran = run_stage(executor, screen_task, todo, [keys[index[p]] for p in order], done, journal, progress,
                    "screen", each)
    return ran, taken


def router_settings() -> dict:
    """The replicas check's settings (passed on in each task: workers import afresh)."""
    return {"min_seconds": rate_plan.ROUTER_MIN_SECONDS, "min_per_replica": rate_plan.ROUTER_MIN_PER_REPLICA,
            "max_extra": rate_plan.ROUTER_MAX_EXTRA}


def router_key(args, context: str, point: s.GridPoint) -> str:
    """A point's replicas check's key in the journal: the peak, the headroom and the settings."""
    stage = "router:" + json.dumps({"peak_rate": args.peak_rate, "headroom": args.headroom, **router_settings()},
                                   sort_keys=True)
    return s.point_key(point, context, stage)


def router_stage(executor, args, base, slo, confirmed: dict, price: dict, context: str, done: dict,
                 journal: Journal, progress: Progress, checked: frozenset = frozenset()) -> tuple[int, int]:
    """The replicas of the --best cheapest confirmed points checked behind a router, as plan
    checks them (`sim.search.router_point`). A check can only add replicas, so a checked point
    may cost more than an unchecked one ranked below it: the points are ranked again and checked
    until the --best cheapest are all checked. `confirmed` takes the checked results. `checked`:
    the keys of checks the confirmation made already (`confirm_stage`), run now though in the
    journal. Returns (checks run, checks reused from the journal)."""
    settings = router_settings()
    ran = reused = 0
    while True:
        ok = [r for r in confirmed.values() if r.feasible]
        ranked = sorted(ok, key=lambda r: s.rank_key(r, s.cost(r, price[r.point.gpu], args.peak_rate, args.headroom)))
        todo = [r for r in ranked[:args.best] if r.stage != "router"]
        if not todo:
            return ran, reused
        keys = [router_key(args, context, r.point) for r in todo]
        ran += sum(k in checked for k in keys)
        reused += sum(k in done and k not in checked for k in keys)
        ran += run_stage(executor, router_task, [(base, r, slo, args.peak_rate, args.headroom, settings) for r in todo],
                         keys, done, journal, progress, "replicas behind a router")
        for r, k in zip(todo, keys):
            confirmed[r.point] = done[k]


def confirm_stage(executor, base, slo, n: int, settings: dict, keep: list, keys: list[str], done: dict,
                  journal: Journal, progress: Progress, router=None) -> tuple[int, frozenset]:
    """The confirmation: each point of `keep` not yet done searched and confirmed as plan does
    (`sim.search.confirm_point`). With worker processes (`Workers.chains`) each point is a chain
    of its own in this process, each run of it (`sim.search.run_unit`) handed to a worker as it
    comes, so the workers stay busy to the last point's last run (a point a task alone left one
    idle while the longest ran); with `router` ((args, context): every feasible point confirmed
    is to be checked) a point's replicas are checked behind a router in its chain as soon as it is
    confirmed. The units are the same wherever they run, so are the results. Each result goes to
    the journal as it comes. Returns (points confirmed, the keys of the router checks made)."""
    pending = [(r, k) for r, k in zip(keep, keys) if k not in done]
    if router is not None:
        args, context = router
        pending += [(r, k) for r, k in zip(keep, keys) if k in done]
    chains = getattr(executor, "chains", None)
    if chains is None or not pending:  # (Ray: a point a task)
        return run_stage(executor, confirm_task, [(base, r.point, slo, n, settings) for r in keep], keys, done,
                         journal, progress, "confirm"), frozenset()
    import threading

    lock = threading.Lock()
    counts = {"confirmed": 0, "ended": 0}
    checked = set()
    progress.start("confirm", len(pending))

    def record(key: str, result: s.PointResult, count: str | None = None) -> None:
        with lock:
            done[key] = result
            journal.add(key, result)
            if count is not None:
                counts[count] += 1

    def chain_of(r: s.PointResult, key: str):
        def chain(run) -> None:
            result = done.get(key)
            if result is None:
                result = s.confirm_point(base, r.point, slo, n, settings["seeds"], settings["min_window"],
                                         settings["min_window_s"], settings["confirm_prompts"],
                                         settings["new_seeds"], run=run)
                record(key, result, "confirmed")
            if router is not None and result.feasible:
                rkey = router_key(args, context, r.point)
                if rkey not in done:
                    rs = router_settings()
                    checked.add(rkey)
                    record(rkey, s.router_point(base, result, slo, args.peak_rate, args.headroom, rs["min_seconds"],
                                                rs["min_per_replica"], rs["max_extra"], run=run, run_all=run.all))
            with lock:
                counts["ended"] += 1
                progress.update(counts["ended"], executor.running, len(pending))
        return chain

    chains(s.run_unit, [chain_of(r, k) for r, k in pending])
    return counts["confirmed"], frozenset(checked)
