"""Best-first search for a program that maps every example input to its output.

States are the tuple of tables obtained by running a program prefix on each example input; a
state is expanded by every step ``library.propose`` suggests for the first example's table. Each
step applied counts as one node (one more per ``CELLS_PER_NODE`` cells of the state and the
targets), the deterministic unit of the budget. The frontier is ordered by
``distance + G_WEIGHT * cost so far`` (ties: first pushed first), identical states are kept once,
and steps that lose a target value outright are pruned. A step costs 1, more when its parameters
are specific (a keyword, a row position, a fixed header). Once a consistent program is found the
search spends an extra window (as many nodes again, at least ``WINDOW``) expanding the cheapest
programs first, looking for a cheaper one, then returns the cheapest by (cost, steps, canonical
text). ``time_budget_s`` is an opt-in wall-clock cap (None, the default: off, so load never
changes an answer): when it trips, the search returns what it has and says so in ``cut_by_time``.
A big example (input of more than ``SAMPLE_ABOVE`` rows) is searched on its head first: the
input's first ``SAMPLE_ROWS_HEAD`` rows and the output's leading rows made of the head's words;
a program is a solution only if it fits the head and reproduces the full example (run
incrementally from its prefix's kept full tables). When none does, a full-table search takes the
rest of the budget, seeded with the programs that fit the head. Without a consistent program it
returns the closest one it kept (smallest distance, then cost), so the emitted code always runs.
``search`` runs the search and returns an ``Outcome`` (every consistent program, ranked, and every
state kept, closest first); ``choose`` picks the answer from it, so one search can serve several
answers (the backend's repairs: the best program not tried yet). ``stages`` is the same search
paused at its budget and continued with fresh nodes on ``send`` (the backend's later repairs of a
chain): stopping at budget a and going on to a + b is the search of budget a + b, state for
state. ``want`` = j + 1 asks for the j-th program distinct in ``behaviour`` (the backend: output
on the new input); ``want=1`` is exactly the plain search.
Speed without changing the result: the distance skips its layout terms for states the search
prunes anyway (they lose a target value), counts values by set operations, reads the state's
hashable rows (the seen-set key) and keeps its pair / triple score per rows' value sets; with
``want`` = 1 a kept state's pair score waits until the state is popped (it enters the frontier
by the rest of its distance, a lower bound, and goes back in line if the finished distance puts
it behind another: the same states are expanded in the same order, and most kept states are
never popped) and the Outcome keeps the ``NEAR_KEEP`` closest states, the only ones whose score
is finished at the end; the
library works out each column's parameters once per search; an unfold too big to keep is counted
as a node without being built; the frontier is a heap of plain tuples; and the cyclic garbage
collector is paused for the search (none of its states form cycles). tests/tracegen/test_synth_shortcuts.py
checks each shortcut against the long way.
Not covered: programs longer than ``max_depth`` steps; parameters the library cannot infer.
"""
from __future__ import annotations

import gc
import heapq
import itertools
import re
from itertools import chain
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from .codegen import emit_code
from .frontier import closest_states, compact_frontier
from .heuristic import Target, finish, lower_bound
from .library import apply_step, propose, step_cost, unfold_cells
from .program import Program, program_key

Table = list[list[str]]
G_WEIGHT = 0.8
CELLS_PER_NODE = 256  # a step on a bigger state counts as several nodes, so time tracks the budget
WINDOW = 500  # extra nodes, at least, spent looking for a cheaper program after the first one
MAX_GROWTH = 4  # a state may hold at most this many times the cells of the example, plus slack
SAMPLE_ABOVE = 200  # an example input of more rows is searched on its head first
SAMPLE_ROWS_HEAD = 30  # rows of the input's head (60 solved as many generated cases, 43 of 60 over
# three generator seeds, at twice the median time; docs/synthesizer.md)
SAMPLE_MIN_FIT = 0.5  # a head fit makes at least this share of the output rows the head expects
SAMPLE_CHECKS = 64  # full-table checks a sampled search may run
SAMPLE_KEEP = 16  # programs whose full tables a sampled search keeps
SAMPLE_SEEDS = 4  # head-fitting programs that seed the full search when none fits the whole
NEAR_KEEP = 64  # closest states an Outcome keeps when the distances are finished lazily (want = 1)
LAZY = True  # finish a kept state's distance only when it is popped (same search; tests turn it off)
_WORDS = re.compile(r"\w+")


@dataclass
class SynthResult:
    found: bool  # ``program`` is consistent with the examples
    program: list  # [(name, params), ...]: the consistent program, else the closest one tried
    code: str  # emitted source of ``program``; always present and runnable
    nodes: int  # steps applied (the budget's unit)
    cut_by_time: bool
    distance: float = 0.0  # of ``program`` from the examples' outputs (0 when found)
    elapsed_s: float = 0.0
    alternatives: int = 0  # consistent, non-excluded programs seen
    distinct: int = 0  # of those, how many behave differently (see ``synthesize``'s ``behaviour``)
    exhausted: bool = False  # fewer than ``want`` distinct consistent programs: ``program`` is the
    # closest candidate that behaves unlike the ones ranked before it


def _key(tables) -> tuple:
    """The state as hashable rows: the seen-set key, also what the distance reads."""
    if len(tables) == 1:
        return (tuple(map(tuple, tables[0])),)
    return tuple(tuple(map(tuple, t)) for t in tables)


@dataclass
class Outcome:
    """Everything one search found, before a program is chosen (what the backend caches)."""

    solutions: list  # (cost, steps, key, program) of the consistent programs, one per key, ranked
    near: list  # (h, program) of the states kept, closest first (distance, cost, order): every
    # one, or with ``want`` = 1 the ``NEAR_KEEP`` closest (``choose`` then reads past at most
    # ``NEAR_KEEP`` - 1 excluded programs)
    nodes: int
    cut_by_time: bool
    start_h: float  # distance of the inputs themselves
    elapsed_s: float = 0.0
    found_at: dict = field(default_factory=dict)  # key -> nodes spent when that solution was first seen
    partial: list = field(default_factory=list)  # programs fitting a sampled head, not the whole
    sampled: bool = False  # the example was big: searched on its head first (``search``)
    spent: int = 0  # nodes this stage of the search cost (``search``: all of them; ``stages``:
    # the nodes since the stage before, or every node when the stage had to be searched afresh)


def synthesize(examples: list[tuple[Table, Table]], *, max_nodes: int, time_budget_s: float | None = None,
               exclude=(), seeds=(), max_depth: int = 6, shuffle_seed: int | None = None,
               g_weight: float = G_WEIGHT, want: int = 1, behaviour=None, sample: bool = True) -> SynthResult:
    """Search for a program consistent with all ``examples`` (input, output) pairs.

    ``exclude``: canonical program keys never returned. ``seeds``: programs whose prefixes start
    in the frontier next to the empty program. ``shuffle_seed``: when set, each expansion tries
    its steps in a seeded random order.
    ``want`` = j + 1 asks for the j-th distinct consistent program in the search's ranking (by
    cost, steps, canonical text; j = 0 is the cheapest, exactly the ``want=1`` search).
    ``behaviour(program)`` names what makes two programs distinct (the backend passes their
    output on the new input); without it, distinct programs are distinct keys. With ``want`` > 1
    the search keeps going after the first window until it has ``want`` distinct programs and
    prunes by the cost of the ``want``-th instead of the cheapest. When it finds fewer, the
    result is the closest candidate behaving unlike every program ranked before it, with
    ``exhausted`` set.
    """
    found = search(examples, max_nodes=max_nodes, time_budget_s=time_budget_s, exclude=exclude, seeds=seeds,
                   max_depth=max_depth, shuffle_seed=shuffle_seed, g_weight=g_weight, want=want,
                   behaviour=behaviour, sample=sample)
    return choose(found, exclude=exclude, want=want, behaviour=behaviour)


def _behave(behaviour):
    """``behaviour`` memoized by program key (the key itself when there is none)."""
    memo: dict = {}

    def behave(program) -> object:
        pk = program_key(program)
        if pk not in memo:
            memo[pk] = behaviour(program) if behaviour is not None else pk
        return memo[pk]
    return behave


def _ranked(solutions, want: int, behave) -> list[tuple]:
    """Solutions by rank, the first of each behaviour, at most ``want``."""
    out, kinds = [], set()
    for sol in sorted({s[2]: s for s in solutions}.values(), key=lambda s: s[:3]):
        kind = behave(sol[3]) if want > 1 else sol[2]
        if kind not in kinds:
            kinds.add(kind)
            out.append(sol)
            if len(out) == want:
                break
    return out


def choose(found: Outcome, *, exclude=(), want: int = 1, behaviour=None) -> SynthResult:
    """The program ``synthesize`` returns from a search's ``Outcome``: the ``want``-th distinct
    consistent program whose key is not in ``exclude``, else the closest candidate (see there)."""
    exclude, behave = set(exclude), _behave(behaviour)
    best = _ranked([s for s in found.solutions if s[2] not in exclude], want, behave)
    args = (found.nodes, found.cut_by_time)
    if len(best) == want:
        program = best[-1][3]
        return SynthResult(True, list(program), emit_code(program), *args, 0.0, found.elapsed_s,
                           len(found.solutions), len(best))
    # fewer than asked: the closest candidates, each unlike every program ranked before it
    kinds = {behave(sol[3]) for sol in best}
    need, pick, closest = want - len(best), None, None
    for h, program in found.near:
        if program_key(program) in exclude:
            continue
        closest = closest or (h, program)
        if want > 1:
            kind = behave(program)
            if kind in kinds:
                continue
            kinds.add(kind)
        pick, need = (h, program), need - 1
        if need == 0:
            break
    if need > 0 and closest:  # not enough distinct candidates either: the closest one
        pick = closest
    h, program = pick if pick else (found.start_h, ())
    return SynthResult(False, list(program), emit_code(program), *args, h, found.elapsed_s, 0, len(best),
                       exhausted=want > 1)


_GC_WAS_ON: list = []  # whether the collector ran before each ``_no_gc`` now open


@contextmanager
def _no_gc():
    """The cyclic collector paused: a search allocates states by the hundred thousand, none of
    them in a reference cycle, and the collector's passes over them cost a fifth of its time."""
    was = gc.isenabled()
    gc.disable()
    _GC_WAS_ON.append(was)
    try:
        yield
    finally:
        _GC_WAS_ON.pop()
        if was:
            gc.enable()


def _settle() -> None:
    """Hand what a paused search holds (a million tuples, none in a reference cycle) to the
    collector's permanent generation, which it never walks: else the first allocation after the
    pause walks all of it, and every later full collection again (a fifth of a repair's time with
    a few dozen paused searches). They are freed as ever when the search is closed (reference
    counts); what ``gc.freeze`` also takes along is only left out of cycle collection."""
    if gc.isenabled() or _GC_WAS_ON[-1:] == [True]:
        gc.freeze()


@_no_gc()
def search(examples: list[tuple[Table, Table]], *, max_nodes: int, time_budget_s: float | None = None,
           exclude=(), seeds=(), max_depth: int = 6, shuffle_seed: int | None = None,
           g_weight: float = G_WEIGHT, want: int = 1, behaviour=None, sample: bool = True) -> Outcome:
    """The search of ``synthesize`` (same arguments), without choosing a program.

    ``sample``: an example whose input has more than ``SAMPLE_ABOVE`` rows is searched on its first
    ``SAMPLE_ROWS_HEAD`` rows (see the module docstring); off, the full tables are searched."""
    t0 = time.perf_counter()
    # the wall-clock cap is off unless asked for (None or <= 0): load must not change the answer
    deadline = t0 + time_budget_s if time_budget_s and time_budget_s > 0 else None
    kw = dict(max_nodes=max_nodes, deadline=deadline, exclude=set(exclude), max_depth=max_depth,
              shuffle_seed=shuffle_seed, g_weight=g_weight, want=want, behave=_behave(behaviour))
    if not (sample and any(len(inp) > SAMPLE_ABOVE for inp, _ in examples)):
        found = _search(examples, None, seeds=seeds, **kw)
        found.spent = found.nodes
    else:
        heads = [_head(inp, out) for inp, out in examples]
        found = _search(heads, examples, seeds=seeds, **{**kw, "max_nodes": max_nodes // 2})
        found.sampled = True
        if not found.solutions and not found.cut_by_time:
            # nothing fit the whole example: search the full tables with the rest of the budget,
            # also from the programs that fit the head (a footer or a last group the head does not
            # show is a step or two away)
            first = found
            found = _search(examples, None, seeds=list(seeds) + first.partial[:SAMPLE_SEEDS],
                            **{**kw, "max_nodes": max(max_nodes - first.nodes, 0)})
            found.nodes += first.nodes
            found.sampled = True
        found.spent = found.nodes
    found.elapsed_s = time.perf_counter() - t0
    return found


def stages(examples: list[tuple[Table, Table]], *, max_nodes: int, time_budget_s: float | None = None,
           exclude=(), seeds=(), max_depth: int = 6, shuffle_seed: int | None = None,
           g_weight: float = G_WEIGHT, want: int = 1, behaviour=None, sample: bool = True):
    """``search`` in stages: a generator whose first Outcome is ``search``'s (same arguments) and
    whose ``send(more)`` continues that search with ``more`` fresh nodes from exactly where it
    stopped (its frontier, the states it kept and the solutions' window as they were), so stage
    k is the search of budget ``max_nodes + more_1 + ... + more_k``, whatever was kept between
    the stages. Each Outcome's ``spent`` is the nodes its stage cost. A big (sampled) example
    is searched afresh at each stage with the whole budget so far (its head / full-table split
    depends on the total); ``spent`` is then all of that search's nodes."""
    total = max_nodes
    kw = dict(exclude=exclude, seeds=seeds, max_depth=max_depth, shuffle_seed=shuffle_seed, g_weight=g_weight,
              want=want, behaviour=behaviour, sample=sample)
    if sample and any(len(inp) > SAMPLE_ABOVE for inp, _ in examples):
        while True:
            more = yield search(examples, max_nodes=total, time_budget_s=time_budget_s, **kw)
            total += max(int(more or 0), 0)

    def deadline(t0):
        return t0 + time_budget_s if time_budget_s and time_budget_s > 0 else None

    t0 = time.perf_counter()
    run = _Search(examples, None, max_nodes=total, deadline=deadline(t0), exclude=set(exclude), seeds=seeds,
                  max_depth=max_depth, shuffle_seed=shuffle_seed, g_weight=g_weight, want=want,
                  behave=_behave(behaviour)).run()
    try:
        with _no_gc():
            found = next(run)
            _settle()
        while True:
            found.elapsed_s = time.perf_counter() - t0
            more = yield found
            t0 = time.perf_counter()
            total += max(int(more or 0), 0)
            with _no_gc():
                found = run.send((total, deadline(t0)))
                _settle()
    finally:
        run.close()


def _head(inp: Table, out: Table) -> tuple[Table, Table]:
    """The first rows of an example pair: the input's, and the output's leading rows that the
    input's head can make (every word of theirs is a word of the head: a reformatted date or a
    split name still is), so the distance is measured against rows the head can reach."""
    head = [list(r) for r in inp[:SAMPLE_ROWS_HEAD]]
    words = {w for r in head for c in r for w in _WORDS.findall(c)}
    m, misses = 0, 0  # a row of new words (a header the user adds) does not end the head
    for i, row in enumerate(out):
        if all(w in words for c in row for w in _WORDS.findall(c)):
            m, misses = i + 1, 0
        else:
            misses += 1
            if misses >= 3:
                break
    return head, [list(r) for r in out[:max(m, 1)]]


def _fits_head(tables, heads, full) -> bool:
    """Could these tables, made from the examples' first rows, be the start of the outputs? Every
    row but the last must be the output's row there (a record or group the head cuts short may
    end differently), and at least ``SAMPLE_MIN_FIT`` of the head's output rows must be made."""
    for t, (_, want), (_, out) in zip(tables, heads, full):
        if not (min(2, len(out)) <= len(t) <= len(out) and len(t) >= SAMPLE_MIN_FIT * len(want)):
            return False
        if any(list(a) != list(b) for a, b in zip(t[:-1], out)):
            return False
    return True


def _search(examples, full, **kw) -> Outcome:
    """``_Search`` run once, to its budget: the search of ``search`` (arguments there)."""
    run = _Search(examples, full, resumable=False, **kw).run()
    try:
        return next(run)
    finally:
        run.close()


class _Search:
    """Best-first search over ``examples``. With ``full`` (the whole examples of which ``examples``
    holds the first rows) a program is a solution when its tables fit the head (``_fits_head``)
    and it reproduces the full examples, which it is run on incrementally: the full tables of
    each program checked are kept, so checking a program extends its prefix's by one step.

    Its state is attributes and its steps methods, each callable alone; ``run`` is the search: a
    generator that yields the ``Outcome`` when the nodes reach ``max_nodes`` (or it ends), and
    ``send((max_nodes, deadline))`` continues it to a larger budget from exactly where it stopped
    (mid-expansion included), so stopping at budget a and continuing to b is the search of budget
    b, state for state. A search that ended (frontier empty, window over) yields its final Outcome
    again. ``resumable`` False: the caller only reads the first Outcome (no ``compact_frontier``
    at the pause)."""

    def __init__(self, examples, full, *, max_nodes: int, deadline, exclude: set, seeds, max_depth: int,
                 shuffle_seed, g_weight: float, want: int, behave, resumable: bool = True):
        self.examples, self.full, self.seeds, self.exclude = examples, full, seeds, exclude
        self.behave = behave
        self.max_nodes, self.deadline, self.max_depth = max_nodes, deadline, max_depth
        self.g_weight, self.want, self.resumable = g_weight, want, resumable
        self.inputs = tuple([list(r) for r in inp] for inp, _ in examples)
        self.targets = [Target.of(out) for _, out in examples]
        self.goal = tuple(t.table for t in self.targets)
        self.target_cells = sum(len(r) for _, out in examples for r in out)
        self.limit = MAX_GROWTH * max(sum(len(r) for t in self.inputs for r in t),
                                      sum(t.n_cells for t in self.targets)) + 64
        # a state of more cells than this is dropped unseen (it cannot be a solution either)
        self.oversize = max(self.limit, sum(len(r) for _, out in (full or examples) for r in out))
        self.rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
        self.order = itertools.count()
        # (f, order, program, tables, g, h, lost, key, parts): plain tuples, compared in C by (f, order)
        # alone; with parts, h is the lower bound ``heuristic.lower_bound`` and f follows from it
        self.frontier: list[tuple] = []
        self.lazy = LAZY and want == 1  # want > 1 walks the closest states far down: all finished then
        self.finished: dict = {}  # order -> h of the lazily kept states finished when popped
        self.seen: set = set()
        self.tried: list[tuple] = []  # (h, g, order, program, key, parts) of every state kept: near misses
        self.solutions: list[tuple] = []  # (cost, steps, key, program)
        self.found_at: dict = {}
        self.partial: list = []  # with ``full``: programs that fit the head but not the whole example
        # stop_at: where the window after the first solution ends (the budget caps it separately)
        self.nodes, self.cut, self.stop_at, self.cheapest_first, self.bound = 0, False, None, False, None
        self.paused = 0  # nodes when the last stage stopped
        self.start_h = None  # distance of the inputs, set when ``run`` starts
        self.checker = _FullCheck(full) if full is not None else None

    def low(self, tables, max_lost=None):
        """(lower bound of h, lost, each example's bound) summed over the examples
        (``heuristic.lower_bound``); the bounds are None once lost passes ``max_lost``."""
        targets = self.targets
        if len(tables) == 1:  # one example, the usual case
            b, lost = lower_bound(tables[0], targets[0], max_lost)
            return b, lost, None if b is None else (b,)
        total, lost, parts = 0.0, 0, []
        for t, tgt in zip(tables, targets):
            b, k = lower_bound(t, tgt, None if max_lost is None else max_lost - lost)
            lost += k
            if b is None:
                return None, lost, None
            total += b
            parts.append(b)
        return total, lost, tuple(parts)

    def exact(self, tables, parts) -> float:
        """h summed over the examples, from ``low``'s per-example bounds (the terms in the same order)."""
        if len(tables) == 1:
            return finish(tables[0], self.targets[0], parts[0])
        total = 0.0
        for t, tgt, p in zip(tables, self.targets, parts):
            total += finish(t, tgt, p)
        return total

    def solved(self, tables, key, program) -> bool:
        if self.checker is None:
            return key == self.goal
        if not _fits_head(tables, self.examples, self.full):
            return False
        ok = self.checker.reproduces(program)
        if ok is False and len(self.partial) < SAMPLE_SEEDS:
            self.partial.append(program)
            if self.stop_at is None:  # the rest is a step the head cannot show: leave it to the full search
                self.stop_at = self.nodes + max(WINDOW, self.nodes)
        return bool(ok)

    def consider(self, tables, program: Program, g: float, parent_lost: int | None) -> None:
        """Keep the state ``program`` (of cost ``g``) reaches, or record it as a solution; drop it
        when seen before, too big, or losing more target values than its parent (``parent_lost``)."""
        key = _key(tables)
        if self.solved(tables, key, program):
            pk = program_key(program)
            if pk not in self.exclude:
                solutions = self.solutions
                solutions.append((round(g, 6), len(program), pk, program))
                self.found_at.setdefault(pk, self.nodes)
                if not self.cheapest_first:
                    self.cheapest_first = True
                    # from now on, cheapest programs first: look for a shorter one
                    frontier = self.frontier
                    frontier[:] = [(n[4] * 100.0 + n[5],) + n[1:] for n in frontier]
                    heapq.heapify(frontier)
                if self.want == 1:
                    bound = self.bound
                    self.bound = min(bound, solutions[-1][0]) if bound is not None else solutions[-1][0]
                else:
                    best = _ranked(solutions, self.want, self.behave)
                    self.bound = best[-1][0] if len(best) == self.want else None
                if self.stop_at is None and self.bound is not None:
                    self.stop_at = self.nodes + max(WINDOW, self.nodes)
            return
        seen = self.seen
        if key in seen or sum(map(len, chain.from_iterable(tables))) > self.limit:
            return
        seen.add(key)
        h, lost, parts = self.low(key, parent_lost)
        if parent_lost is not None and lost > parent_lost:
            return
        rest = parts if self.lazy else None  # h stays a bound until the state is popped (if ever)
        if rest is None:
            h = self.exact(key, parts)
        f = h + self.g_weight * g if not self.cheapest_first else g * 100.0 + h
        n = next(self.order)
        self.tried.append((h, g, n, program, key, rest))
        heapq.heappush(self.frontier, (f, n, program, tables, g, h, lost, key, rest))

    def outcome(self) -> Outcome:
        """The search so far; ``spent``: the nodes since the last stage stopped."""
        keep = NEAR_KEEP if self.lazy else len(self.tried)
        near = closest_states(self.tried, self.finished, self.exact, keep)
        ranked = sorted({sol[2]: sol for sol in self.solutions}.values(), key=lambda sol: sol[:3])
        return Outcome(ranked, near, self.nodes, self.cut, self.start_h, 0.0, dict(self.found_at),
                       partial=list(self.partial), spent=self.nodes - self.paused)

    def _pause(self):
        """Yield the Outcome so far; a sent (max_nodes, deadline) is the budget to go on with."""
        if self.resumable:
            compact_frontier(self.frontier, self.targets)
        got = yield self.outcome()
        self.paused = self.nodes
        if got is not None:
            self.max_nodes, self.deadline = got

    def run(self):
        """The search, in stages (see the class). The loop reads the state through locals (it is
        the hot loop) and writes back what the methods read: ``nodes`` at every step."""
        consider, exact, inputs = self.consider, self.exact, self.inputs
        consider(inputs, (), 0.0, None)
        for seed in self.seeds:
            tables, program, g = inputs, (), 0.0
            for step in seed:
                self.nodes += 1
                try:
                    tables = tuple(apply_step(t, step) for t in tables)
                except Exception:  # a seed from elsewhere may not fit these tables
                    break
                program, g = program + (step,), g + step_cost(*step)
                consider(tables, program, g, None)
        self.start_h = exact(inputs, self.low(inputs)[2])
        frontier, finished, targets, rng = self.frontier, self.finished, self.targets, self.rng
        max_depth, g_weight, oversize, cells = self.max_depth, self.g_weight, self.oversize, self.target_cells
        max_nodes, deadline, nodes = self.max_nodes, self.deadline, self.nodes
        heappop, heappush, perf_counter = heapq.heappop, heapq.heappush, time.perf_counter
        while frontier and not self.cut:
            stop_at = self.stop_at  # consider() sets it, and the bound, when it records a solution
            if stop_at is not None and nodes >= stop_at:
                break
            if nodes >= max_nodes:  # the budget is spent: pause here until a larger one is sent
                yield from self._pause()
                max_nodes, deadline = self.max_nodes, self.deadline
                continue
            f, n, program, states, g, _, lost, key, rest = heappop(frontier)
            bound = self.bound
            if len(program) >= max_depth or (bound is not None and g + 1.0 > bound + 1e-9):
                continue  # skipped the same whenever popped: depth is fixed, the bound only falls
            if rest is not None:  # its h was a lower bound: finish it, and back in line unless still first
                h = finished[n] = exact(key, rest)
                exact_f = h + g_weight * g if not self.cheapest_first else g * 100.0 + h
                if exact_f > f:
                    heappush(frontier, (exact_f, n, program, states, g, h, lost, key, None))
                    continue
            if states is None:  # kept while paused as its key alone (``compact_frontier``)
                states = tuple([list(r) for r in t] for t in key)
            steps = propose(states[0], targets[0])
            if rng is not None:
                steps = list(steps)
                rng.shuffle(steps)
            weight = 1 + (sum(map(len, chain.from_iterable(states))) + cells) // CELLS_PER_NODE
            for step in steps:
                stop_at = self.stop_at
                if stop_at is not None and nodes >= stop_at:
                    break
                while nodes >= max_nodes:  # paused in mid-expansion: a larger budget goes on from here
                    yield from self._pause()
                    max_nodes, deadline = self.max_nodes, self.deadline
                if deadline is not None and perf_counter() > deadline:
                    self.cut = True
                    break
                self.nodes = nodes = nodes + weight
                try:
                    if step[0] == "unfold" and sum(unfold_cells(t, **step[1]) for t in states) > oversize:
                        continue  # a wide blow-up consider() would drop: counted, not built
                    tables = tuple([apply_step(t, step) for t in states])
                except Exception:  # operators are total on the tables they were proposed for
                    continue
                consider(tables, program + (step,), g + step_cost(*step), lost)

        final = self.outcome()
        while True:  # ended: every later stage is this one, at no cost
            yield final
            final = replace(final, spent=0)


class _FullCheck:
    """Runs programs on the full examples, keeping each checked program's tables so that a
    program extending a checked one costs one step (at most ``SAMPLE_CHECKS`` programs a search:
    past that a head fit is not checked, so a flood of near-fits cannot cost a full run each)."""

    def __init__(self, full):
        self.inputs = tuple([list(r) for r in inp] for inp, _ in full)
        self.goal = _key([out for _, out in full])
        self.tables: dict = {program_key(()): self.inputs}
        self.verdict: dict = {}
        self.checks = 0

    def _run(self, program):
        pk = program_key(program)
        if pk in self.tables:
            return self.tables[pk]
        parent = self._run(program[:-1])
        got = None if parent is None else _apply_all(parent, program[-1])
        if len(self.tables) < SAMPLE_KEEP:  # full tables are big: keep a few prefixes only
            self.tables[pk] = got
        return got

    def reproduces(self, program) -> bool | None:
        """True / False, or None when the check budget is spent."""
        pk = program_key(program)
        if pk in self.verdict:
            return self.verdict[pk]
        if self.checks >= SAMPLE_CHECKS:
            return None
        self.checks += 1
        tables = self._run(program)
        self.verdict[pk] = ok = tables is not None and _key(tables) == self.goal
        return ok


def _apply_all(tables, step):
    try:
        return tuple(apply_step(t, step) for t in tables)
    except Exception:  # operators are total; a guard only
        return None
