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
text). ``time_budget_s`` is a safety net: when it trips, the search returns what it has and says
so in ``cut_by_time``. Without a consistent program it returns the closest one it kept (smallest
distance, then cost), so the emitted code always runs.
Not covered: programs longer than ``max_depth`` steps; parameters the library cannot infer.
"""
from __future__ import annotations

import heapq
import itertools
import random
import time
from dataclasses import dataclass, field

from .codegen import emit_code
from .heuristic import Target, distance
from .library import apply_step, propose, step_cost
from .program import Program, program_key

Table = list[list[str]]
G_WEIGHT = 0.8
CELLS_PER_NODE = 256  # a step on a bigger state counts as several nodes, so time tracks the budget
WINDOW = 500  # extra nodes, at least, spent looking for a cheaper program after the first one
MAX_GROWTH = 4  # a state may hold at most this many times the cells of the example, plus slack


@dataclass
class SynthResult:
    found: bool
    program: list  # [(name, params), ...]: the consistent program, else the closest one tried
    code: str  # emitted source of ``program``; always present and runnable
    nodes: int  # steps applied
    cut_by_time: bool
    distance: float = 0.0  # of ``program`` from the examples' outputs (0 when found)
    elapsed_s: float = 0.0
    alternatives: int = 0  # consistent, non-excluded programs seen


@dataclass(order=True)
class _Node:
    f: float
    order: int
    program: Program = field(compare=False)
    tables: tuple = field(compare=False)
    g: float = field(compare=False)
    h: float = field(compare=False)
    lost: int = field(compare=False)


def _key(tables) -> tuple:
    return tuple(tuple(map(tuple, t)) for t in tables)


def synthesize(examples: list[tuple[Table, Table]], *, max_nodes: int, time_budget_s: float,
               exclude=(), seeds=(), max_depth: int = 6, shuffle_seed: int | None = None,
               g_weight: float = G_WEIGHT) -> SynthResult:
    """Search for a program consistent with all ``examples`` (input, output) pairs.

    ``exclude``: canonical program keys never returned. ``seeds``: programs whose prefixes start
    in the frontier next to the empty program (a repair continues from the failed attempt).
    ``shuffle_seed``: when set, each expansion tries its steps in a seeded random order.
    """
    t0 = time.perf_counter()
    inputs = tuple([list(r) for r in inp] for inp, _ in examples)
    targets = [Target.of(out) for _, out in examples]
    goal = tuple(t.table for t in targets)
    exclude = set(exclude)
    target_cells = sum(len(r) for _, out in examples for r in out)
    limit = MAX_GROWTH * max(sum(len(r) for t in inputs for r in t), sum(t.n_cells for t in targets)) + 64
    rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
    order = itertools.count()
    frontier: list[_Node] = []
    seen: set = set()
    tried: list[tuple] = []  # (h, g, order, program) of every state kept: near-miss candidates
    solutions: list[tuple] = []  # (cost, steps, key, program)
    nodes, cut, stop_at = 0, False, None

    def score(tables):
        hs = [distance(t, tgt) for t, tgt in zip(tables, targets)]
        return sum(h for h, _ in hs), sum(lost for _, lost in hs)

    def consider(tables, program: Program, g: float, parent_lost: int | None) -> None:
        nonlocal stop_at
        key = _key(tables)
        if key == goal:
            pk = program_key(program)
            if pk not in exclude:
                solutions.append((round(g, 6), len(program), pk, program))
                if stop_at is None:
                    stop_at = min(max_nodes, nodes + max(WINDOW, nodes))
                    # from now on, cheapest programs first: look for a shorter one
                    for node in frontier:
                        node.f = node.g * 100.0 + node.h
                    heapq.heapify(frontier)
            return
        if key in seen or sum(len(r) for t in tables for r in t) > limit:
            return
        seen.add(key)
        h, lost = score(tables)
        if parent_lost is not None and lost > parent_lost:
            return
        f = h + g_weight * g if stop_at is None else g * 100.0 + h
        node = _Node(f, next(order), program, tables, g, h, lost)
        tried.append((h, g, node.order, program))
        heapq.heappush(frontier, node)

    consider(inputs, (), 0.0, None)
    for seed in seeds:
        tables, program, g = inputs, (), 0.0
        for step in seed:
            nodes += 1
            try:
                tables = tuple(apply_step(t, step) for t in tables)
            except Exception:  # a seed from elsewhere may not fit these tables
                break
            program, g = program + (step,), g + step_cost(*step)
            consider(tables, program, g, None)

    while frontier and nodes < max_nodes and not cut:
        if stop_at is not None and nodes >= stop_at:
            break
        node = heapq.heappop(frontier)
        best = min((s[0] for s in solutions), default=None)
        if len(node.program) >= max_depth or (best is not None and node.g + 1.0 > best + 1e-9):
            continue
        steps = propose(node.tables[0], targets[0])
        if rng is not None:
            steps = list(steps)
            rng.shuffle(steps)
        weight = 1 + (sum(len(r) for t in node.tables for r in t) + target_cells) // CELLS_PER_NODE
        for step in steps:
            if nodes >= max_nodes or (stop_at is not None and nodes >= stop_at):
                break
            if time.perf_counter() - t0 > time_budget_s:
                cut = True
                break
            nodes += weight
            try:
                tables = tuple(apply_step(t, step) for t in node.tables)
            except Exception:  # operators are total on the tables they were proposed for
                continue
            consider(tables, node.program + (step,), node.g + step_cost(*step), node.lost)

    elapsed = time.perf_counter() - t0
    if solutions:
        program = min(solutions, key=lambda s: s[:3])[3]
        return SynthResult(True, list(program), emit_code(program), nodes, cut, 0.0, elapsed, len(solutions))
    near = next((t for t in sorted(tried, key=lambda t: t[:3]) if program_key(t[3]) not in exclude), None)
    h, program = (near[0], near[3]) if near else (score(inputs)[0], ())
    return SynthResult(False, list(program), emit_code(program), nodes, cut, h, elapsed, 0)
