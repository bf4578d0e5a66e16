"""The best-first search's frontier helpers (``search._Search``): a paused frontier made small, and
the closest kept states, finishing only the distances that decide them."""
from __future__ import annotations

import heapq


def compact_frontier(frontier: list, targets) -> None:
    """A paused search made small: its frontier without the states' tables, which their keys (the
    same rows as tuples) hold too, and its targets' memos emptied (caches of pure functions of
    the state, filled again as needed). It then takes a fraction of the memory, and the cyclic
    collector, which stops looking at tuples of strings, has almost nothing of it to walk. The
    heap order (by f, then order) is unchanged; a state's tables are rebuilt from its key when
    it is popped, so the search goes on as if it had never paused."""
    frontier[:] = [e if e[3] is None else e[:3] + (None,) + e[4:] for e in frontier]
    for tgt in targets:
        for memo in ("memo", "pair_memo", "layout_memo"):
            tgt.__dict__.pop(memo, None)


def closest_states(tried, finished: dict, exact, keep: int) -> list:
    """(h, program) of the ``keep`` closest kept states by (h, cost, order), finishing only the
    distances that can still decide them. ``tried`` holds (h or its lower bound, g, order,
    program, key, parts): a state is placed once no state left, taken in the order of its bounds,
    can come before it (a bound is never above its distance)."""
    out: list = []
    ready: list = []  # finished states, a heap by (h, g, order)
    for h, g, n, program, key, rest in sorted(tried, key=lambda t: t[:3]):
        while ready and ready[0][:3] < (h, g, n) and len(out) < keep:
            out.append(heapq.heappop(ready))
        if len(out) == keep:
            break
        if rest is not None:
            h = finished[n] if n in finished else exact(key, rest)
        heapq.heappush(ready, (h, g, n, program))
    while ready and len(out) < keep:
        out.append(heapq.heappop(ready))
    return [(h, program) for h, _, _, program in out]
