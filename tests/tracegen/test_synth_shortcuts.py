"""The search's shortcuts give exactly what the long way gives.

Each shortcut skips work whose result is known another way: the size of an unfold before building
it, the pair F1 of long rows by counting instead of enumerating, a template kept parsed, a kept
state's pair score left for when it is popped. Each is checked here against the plain computation
on random tables, including the edge cases (negative or out-of-range columns, empty tables, ragged
rows, lazy groups), and the lazy search against the eager one on real cases.
"""
from __future__ import annotations

import random
import re
from itertools import combinations

import importlib

import pytest

from cases import load_cases
from cases.generators.large import large_cases
from tracegen.synth import choose
from tracegen.synth import heuristic as H
from tracegen.synth.library import unfold_cells
from tracegen.synth.operators import rewrite_cells, unfold


def _table(rng, rows, cols, alphabet):
    return [[rng.choice(alphabet) for _ in range(rng.randint(0, cols))] for _ in range(rows)]


@pytest.mark.parametrize("seed", range(3))
def test_unfold_cells_is_the_size_of_unfold(seed):
    rng = random.Random(seed)
    for _ in range(3000):
        table = _table(rng, rng.randint(0, 9), 5, ["", "a", "b", "c", "d", "e"])
        hcol, vcol = rng.randint(-1, 5), rng.randint(-1, 5)
        header = rng.choice(["none", "blank", "first"])
        out = unfold(table, hcol, vcol, header)
        assert unfold_cells(table, hcol, vcol, header) == sum(map(len, out)), (table, hcol, vcol, header)


def _pairs_f1(kept, tgt):
    have = {p for v in kept for p in combinations(sorted(v), 2)}
    return 2 * len(have & tgt.pairs) / (len(have) + len(tgt.pairs))


@pytest.mark.parametrize("disjoint", [True, False])
def test_pair_score_counts_long_rows_exactly(disjoint):
    rng = random.Random(7)
    checked_long = 0
    for _ in range(1500):
        values = [f"v{i}" for i in range(rng.randint(2, 160))]
        tgt = H.Target.of([rng.sample(values, rng.randint(1, min(10, len(values)))) for _ in range(rng.randint(1, 20))])
        if not tgt.pairs:
            continue
        pool = sorted(tgt.values)
        rng.shuffle(pool)
        kept, i = [], 0
        for _ in range(rng.randint(1, 6)):
            k = rng.randint(0, 90)
            if disjoint:
                kept.append(frozenset(pool[i:i + k]))
                i += k
            else:
                kept.append(frozenset(rng.sample(pool, min(k, len(pool)))))
        checked_long += sum(len(v) for v in set(kept) if len(v) > 1) > H.BIG_ROWS
        assert H._pair_score(kept, tgt) == _pairs_f1(kept, tgt)
    assert checked_long > 50  # the counting path was exercised


@pytest.mark.parametrize("pattern,template,cells", [
    (r"(\d+)/(\d+)/(\d+)", r"\g<3>-\g<1>-\g<2>", ["1/2/2020", "x", "10/11/1999", "1/2/3/4", ""]),
    (r"(\w+?)(\d*)", r"\g<2>:\g<1>", ["abc12", "a", "", "12"]),  # a lazy group: first match is short
    (r"(a*)", r"[\g<1>]", ["", "aaa", "ab"]),                    # empty matches
    (r"([^\W\d_])([^\W\d_]*) (\d+)", r"\g<3> \\ \g<1>.", ["John 12", "j 1", "John"]),
])
def test_rewrite_cells_matches_match_expand(pattern, template, cells):
    table = [[c, "k"] for c in cells] + [[]]
    got = rewrite_cells(table, 0, pattern, template)
    want = []
    for row in table:
        row = list(row)
        if row:
            m = re.fullmatch(pattern, row[0])
            if m:
                row[0] = m.expand(template)
        want.append(row)
    assert got == want


def test_lower_bound_is_never_above_the_distance_and_finish_completes_it():
    rng = random.Random(3)
    alphabet = ["", "a", "b", "c", "a b", "x", "Total", "1", "2"]
    for _ in range(3000):
        tgt = H.Target.of(_table(rng, rng.randint(1, 6), 4, alphabet))
        table = _table(rng, rng.randint(0, 7), 5, alphabet)
        max_lost = rng.choice([None, 0, 1, 3])
        low, lost = H.lower_bound(table, tgt, max_lost)
        h, lost_too = H.distance(table, tgt, max_lost)
        assert lost == lost_too
        if h is None:
            assert low is None and lost > max_lost
            continue
        assert low <= h <= low + H.W["pairs"] + 0.25, (table, tgt.table)
        assert H.finish(table, tgt, low) == h
    assert H.distance(tgt.table, tgt) == (0, 0)  # a table equal to its target is at 0


def _searches(case_tables, budget):
    """Both ways of each search: (eager Outcome, lazy Outcome)."""
    S = importlib.import_module("tracegen.synth.search")
    for inp, out in case_tables:
        examples = [(inp, out)]
        first = choose(S.search(examples, max_nodes=100)).program
        got = []
        for lazy in (False, True):
            S.LAZY = lazy
            try:
                got.append(S.search(examples, max_nodes=budget, seeds=[first] if first else []))
            finally:
                S.LAZY = True
        yield got


def test_the_lazy_search_finds_what_the_eager_search_finds():
    """Pair scores finished when a state is popped: the same expansions, nodes, solutions and
    closest states as finishing every kept state (repair-sized searches, one of them sampled)."""
    S = importlib.import_module("tracegen.synth.search")
    foofah = [(c.input_table, c.output_table) for c in load_cases("cases/foofah")[::25]]
    big = [(c["InputTable"], c["OutputTable"]) for c in large_cases(1, 0)]
    unsolved = 0
    for eager, lazy in _searches(foofah + big, 3000):
        assert (lazy.solutions, lazy.nodes, lazy.found_at, lazy.start_h, lazy.partial) == \
               (eager.solutions, eager.nodes, eager.found_at, eager.start_h, eager.partial)
        assert lazy.near == eager.near[:S.NEAR_KEEP]
        unsolved += not eager.solutions
        for k in range(3):  # the answer with k programs excluded, as repairs ask
            tried = [S.program_key(p) for _, p in eager.near[:k]]
            assert choose(lazy, exclude=tried).program == choose(eager, exclude=tried).program
    assert unsolved  # a search that runs out its budget (the case the laziness is for) was compared
