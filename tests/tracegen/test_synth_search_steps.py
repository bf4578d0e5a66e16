"""The search's steps alone (``search._Search``): each method called on a tiny example, its state
read back, without running the search loop."""
from __future__ import annotations

from tracegen.synth.heuristic import finish, lower_bound
from tracegen.synth.library import apply_step
from tracegen.synth.program import program_key
from tracegen.synth.search import G_WEIGHT, WINDOW, _behave, _head, _key, _Search

DROP = ("drop_column", {"col": 1})
INP = [["a", "1"], ["b", "2"]]
OUT = [["a"], ["b"]]


def _search(examples, full=None, **kw):
    args = dict(max_nodes=1000, deadline=None, exclude=set(), seeds=(), max_depth=6, shuffle_seed=None,
                g_weight=G_WEIGHT, want=1, behave=_behave(None))
    return _Search(examples, full, **{**args, **kw})


def _tables(s, program):
    tables = s.inputs
    for step in program:
        tables = tuple(apply_step(t, step) for t in tables)
    return tables


def test_consider_keeps_a_new_state_once():
    s = _search([(INP, OUT)])
    s.consider(s.inputs, (), 0.0, None)
    assert len(s.frontier) == len(s.tried) == 1 and s.seen == {_key(s.inputs)}
    f, n, program, tables, g, h, lost, key, rest = s.frontier[0]
    assert (n, program, g, key) == (0, (), 0.0, _key(s.inputs)) and f == h + G_WEIGHT * g
    s.consider(s.inputs, (("strip_cells", {}),), 1.0, None)  # the same tables by another program
    assert len(s.frontier) == len(s.tried) == 1


def test_consider_drops_a_state_over_the_cell_limit():
    s = _search([(INP, OUT)])
    assert s.limit == 4 * 4 + 64  # MAX_GROWTH times the input's 4 cells, plus slack
    big = ([["x"] * 9 for _ in range(9)],)  # 81 cells
    s.consider(big, (("strip_cells", {}),), 1.0, None)
    assert not s.frontier and not s.seen and not s.tried


def test_consider_records_a_solution_and_turns_cheapest_first():
    s = _search([(INP, OUT)])
    s.consider(s.inputs, (), 0.0, None)
    s.consider(_tables(s, (("transpose", {}),)), (("transpose", {}),), 1.0, None)
    assert len(s.frontier) == 2 and not s.cheapest_first
    s.nodes = 30
    s.consider(_tables(s, (DROP,)), (DROP,), 1.0, 0)
    pk = program_key((DROP,))
    assert s.solutions == [(1.0, 1, pk, (DROP,))] and s.found_at == {pk: 30}
    assert s.cheapest_first and s.bound == 1.0 and s.stop_at == 30 + max(WINDOW, 30)
    assert len(s.frontier) == 2  # a solution is recorded, not kept in the frontier
    assert all(e[0] == e[4] * 100.0 + e[5] for e in s.frontier)  # re-keyed by cost first
    assert s.frontier[0] == min(s.frontier)  # and still a heap


def test_consider_skips_an_excluded_solution():
    s = _search([(INP, OUT)], exclude={program_key((DROP,))})
    s.consider(_tables(s, (DROP,)), (DROP,), 1.0, 0)
    assert not s.solutions and not s.cheapest_first and s.bound is None and s.stop_at is None


def test_low_and_exact_sum_over_two_examples():
    ex1 = ([["a", "1"], ["b", "2"]], [["a"], ["b"]])
    ex2 = ([["x", "y", "z"], ["1", "2", "3"]], [["x", "1"], ["y", "2"], ["z", "3"]])
    s = _search([ex1, ex2])
    key = _key(s.inputs)
    h, lost, parts = s.low(key)
    one = [lower_bound(t, tgt, None) for t, tgt in zip(key, s.targets)]
    assert parts == tuple(b for b, _ in one) and h == sum(parts) and lost == sum(k for _, k in one)
    alone = [_search([ex]) for ex in (ex1, ex2)]
    assert [a.low(_key(a.inputs))[0] for a in alone] == list(parts)
    assert s.exact(key, parts) == sum(finish(t, tgt, p) for t, tgt, p in zip(key, s.targets, parts))
    assert s.exact(key, parts) == sum(a.exact(_key(a.inputs), a.low(_key(a.inputs))[2]) for a in alone)


def test_solved_on_a_head_checks_the_full_example():
    inp = [[f"n{i}", str(i)] for i in range(40)]
    out = [[f"n{i}"] for i in range(40)]
    head = _head(inp, out)
    assert len(head[0]) == len(head[1]) == 30
    s = _search([head], [(inp, out)])
    tables = _tables(s, (DROP,))
    assert s.solved(tables, _key(tables), (DROP,)) and not s.partial
    assert not s.solved(s.inputs, _key(s.inputs), ())  # does not fit the head: never run on the full
    assert s.checker.checks == 1

    other = out[:-1] + [["footer"]]  # the head cannot show the last row
    s = _search([_head(inp, other)], [(inp, other)])
    s.nodes = 700
    tables = _tables(s, (DROP,))
    assert not s.solved(tables, _key(tables), (DROP,))
    assert s.partial == [(DROP,)] and s.stop_at == 700 + max(WINDOW, 700)  # left to the full search


def test_solved_without_a_head_is_the_goal():
    s = _search([(INP, OUT)])
    tables = _tables(s, (DROP,))
    assert s.solved(tables, _key(tables), (DROP,)) and not s.solved(s.inputs, _key(s.inputs), ())
