"""Distinct program samples, search nodes per completion, the worker pool and the repair cache."""
from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import pytest

from tracegen.backends import BackendConfig, Feedback, GenerationRequest, Task
from tracegen.backends.synth import SynthBackend
from tracegen.synth import program_key, read_history, run_program, synthesize
from tracegen.synth.heuristic import W, Target, columns, distance

# three programs fit the example; on the new input, deleting blank rows and deleting "b" differ
ROWS = Task.from_tables("rows_1", [["a", "1"], ["b", ""], ["c", "3"]], [["a", "1"], ["c", "3"]],
            [["d", ""], ["e", "5"], ["b", "6"]])
CRIME = Task.from_tables(
    "crime_1",
    [["Reported crime in Alabama", ""], ["", ""], ["2004", "4029.3"], ["2005", "3900"],
     ["Reported crime in Alaska", ""], ["", ""], ["2004", "3370.9"], ["2005", "3615"]],
    [["Alabama", "2004", "4029.3"], ["Alabama", "2005", "3900"],
     ["Alaska", "2004", "3370.9"], ["Alaska", "2005", "3615"]],
    [["Reported crime in Iowa", ""], ["", ""], ["1999", "1"], ["2000", "2"]],
)
MESSAGES = [{"role": "user", "content": "transform"}]


def _program(text: str):
    code = text.split("```python\n", 1)[1].rsplit("```", 1)[0]
    return read_history(code)


def _write(backend, task, sample):
    return backend.generate([GenerationRequest("write", MESSAGES, task, sample=sample)])[0]


def test_sample_j_is_the_jth_distinct_program_by_output_on_the_new_input():
    backend = SynthBackend(BackendConfig(synth_write_nodes=300, extra={"synth_workers": 1}))
    comps = [_write(backend, ROWS, j) for j in range(2)]
    programs = [_program(c.text)[0] for c in comps]
    assert all(c.finish_reason == "stop" for c in comps)
    assert all(run_program(ROWS.input_table, p) == ROWS.output_table for p in programs)
    outs = [run_program(ROWS.test_table, p) for p in programs]
    assert outs[0] != outs[1]  # distinct by behaviour, not merely by text
    # sample 0 is exactly the plain search's program; sample 1 is the next one in its ranking
    plain = synthesize([(ROWS.input_table, ROWS.output_table)], max_nodes=300, time_budget_s=30)
    assert programs[0] == tuple(plain.program)
    assert [c.text for c in comps] == [_write(backend, ROWS, j).text for j in range(2)]


def test_too_few_programs_is_exhausted_and_says_so():
    backend = SynthBackend(BackendConfig(synth_write_nodes=100, extra={"synth_workers": 1}))
    first = _write(backend, CRIME, 0)
    assert first.finish_reason == "stop"  # sample 0 never reports exhaustion
    later = [_write(backend, CRIME, j) for j in (1, 2)]
    assert all(c.finish_reason == "exhausted" and "fewer than sample" in c.text for c in later)
    outs = [run_program(CRIME.test_table, _program(c.text)[0]) for c in [first] + later]
    assert len({str(o) for o in outs}) == 3  # each candidate behaves unlike the samples before it


def test_search_nodes_per_completion():
    backend = SynthBackend(BackendConfig(synth_write_nodes=150, extra={"synth_workers": 1}))
    direct = backend.generate([GenerationRequest("direct", MESSAGES, CRIME)])[0]
    write = _write(backend, CRIME, 0)
    assert direct.search_nodes == 0
    assert 0 < write.search_nodes <= 150 + 10  # the last step may overshoot by its weight


def _chain(backend, task, sample, repairs=2):
    """WRITE then FIX rounds while the program fails the example, as the rollout does."""
    comps, prev, feedback = [], None, None
    for rnd in range(repairs + 1):
        req = GenerationRequest("write", MESSAGES, task, sample=sample) if rnd == 0 else GenerationRequest(
            "fix", MESSAGES, task, round=rnd, previous_code=prev, feedback=feedback, sample=sample)
        comp = backend.generate([req])[0]
        comps.append(comp)
        program, _ = read_history(comp.text.split("```python\n", 1)[1])
        out = run_program(task.input_table, program)
        if out == task.output_table:
            break
        prev = comp.text.split("```python\n", 1)[1].rsplit("```", 1)[0]
        feedback = Feedback("wrong_output", "output differs from the public example", out)
    return comps


def test_repairs_never_repeat_and_the_cache_changes_nothing():
    impossible = Task.from_tables("imp_1", [["a", "b"], ["c", "d"]], [["totally", "new"], ["words", "here"]], [["e", "f"]])
    cfg = dict(synth_write_nodes=50, synth_fix_nodes=600, extra={"synth_workers": 1})
    warm = SynthBackend(BackendConfig(**cfg))
    chain = _chain(warm, impossible, 0)
    keys = [_program(c.text)[0] for c in chain]
    assert len(chain) == 3 and len({program_key(k) for k in keys}) == 3
    assert len(_program(chain[-1].text)[1]) == 3  # its own history: the two tried and itself
    # the second repair came from the cache; a fresh backend computes the same answer
    fresh = SynthBackend(BackendConfig(**cfg))
    req = GenerationRequest("fix", MESSAGES, impossible, round=2,
                            previous_code=chain[1].text.split("```python\n", 1)[1].rsplit("```", 1)[0],
                            feedback=Feedback("wrong_output", "x", None))
    again = fresh.generate([req])[0]
    assert again.text == chain[2].text and again.search_nodes == chain[2].search_nodes == chain[1].search_nodes


def test_fix_of_sample_j_repairs_its_own_chain():
    backend = SynthBackend(BackendConfig(synth_write_nodes=100, synth_fix_nodes=40_000, extra={"synth_workers": 1}))
    chains = [_chain(backend, CRIME, j) for j in range(2)]
    finals = [_program(ch[-1].text) for ch in chains]
    assert run_program(CRIME.input_table, finals[0][0]) == CRIME.output_table
    # sample 1's history holds only its own attempts
    own = {program_key(_program(c.text)[0]) for c in chains[1]}
    assert set(finals[1][1]) == own


def test_pool_gives_the_serial_answers_in_order():
    reqs = [GenerationRequest("write", MESSAGES, t, sample=j) for t in (CRIME, ROWS) for j in range(2)]
    reqs.insert(1, GenerationRequest("direct", MESSAGES, ROWS))
    serial = SynthBackend(BackendConfig(extra={"synth_workers": 1})).generate(reqs)
    with SynthBackend(BackendConfig(extra={"synth_workers": 2})) as pooled:
        parallel = pooled.generate(reqs)
        assert pooled._pools  # the pool really ran them
    assert [(c.text, c.search_nodes, c.finish_reason) for c in serial] == \
        [(c.text, c.search_nodes, c.finish_reason) for c in parallel]


def test_pool_streams_every_answer_once_and_a_caller_may_stop_early():
    reqs = [GenerationRequest("write", MESSAGES, t, sample=j) for t in (CRIME, ROWS) for j in range(3)]
    reqs.insert(2, GenerationRequest("direct", MESSAGES, ROWS))
    serial = SynthBackend(BackendConfig(extra={"synth_workers": 1})).generate(reqs)
    with SynthBackend(BackendConfig(extra={"synth_workers": 2})) as pooled:
        streamed = list(pooled.generate_iter(reqs))
        assert sorted(i for i, _ in streamed) == list(range(len(reqs)))  # each request once
        assert streamed[0][0] == 2  # the direct guess does not wait for the searches
        got = dict(streamed)
        assert [(got[i].text, got[i].search_nodes) for i in range(len(reqs))] == \
            [(c.text, c.search_nodes) for c in serial]
        for _ in pooled.generate_iter(reqs):  # a caller that stops after one answer
            break
        assert [c.text for c in pooled.generate(reqs)] == [c.text for c in serial]  # the pool still serves


# ---------------------------------------------------------------- the distance, against its spec

def _reference_distance(table, tgt):
    """The distance as first written: one loop over the target's values, sets of pairs per row."""
    counts = Counter(c for r in table for c in r if c)
    joined, missing, lost, matched, surplus = None, 0.0, 0, 0, 0
    for value, need in tgt.counts.items():
        have = counts.get(value, 0)
        if have >= need:
            matched, surplus = matched + need, surplus + have - need
            continue
        matched += have
        if have:
            missing += need - have
            continue
        joined = joined if joined is not None else "\x1f".join(counts)
        if value in joined:
            missing += 0.5 * need
        elif all(tok in joined for tok in tgt.tokens[value]):
            missing += 0.75 * need
        else:
            missing += need
            lost += value not in tgt.insertable
    extra = sum(counts.values()) - matched - surplus
    content = (missing + W["extra"] * extra + W["surplus"] * surplus) / tgt.n_cells
    have_rows = {tuple(r) for r in table}
    row_miss = sum(1 for r in tgt.rows if r not in have_rows) / max(len(tgt.rows), 1)
    have_cols = set(columns(table))
    col_miss = sum(1 for c in tgt.cols if c not in have_cols) / max(len(tgt.cols), 1)
    n_cols = max((len(r) for r in table), default=0)
    shape = W["shape"] * ((len(table) != tgt.n_rows) + (n_cols != tgt.n_cols))
    pairs = set()
    for r in table:
        kept = sorted({c for c in r if c in tgt.values})
        pairs.update(combinations(kept, 2))
    pair = 1.0 if not tgt.pairs else 2 * len(pairs & tgt.pairs) / (len(pairs) + len(tgt.pairs))
    triple = 0.0
    if tgt.triples:
        where: dict = {}
        for i, r in enumerate(table):
            for c in r:
                if c in tgt.values:
                    where.setdefault(c, set()).add(i)
        hits = sum(1 for a, b, v in tgt.triples if where.get(a, set()) & where.get(b, set()) & where.get(v, set()))
        triple = hits / len(tgt.triples)
    h = W["content"] * content + W["rows"] * row_miss + W["cols"] * col_miss + shape \
        + W["pairs"] * (1.0 - max(pair, triple))
    if h == 0 and tuple(map(tuple, table)) != tgt.table:
        h = 0.25
    return h, lost


@pytest.mark.parametrize("seed", range(4))
def test_fast_distance_equals_its_reference_exactly(seed):
    rng = random.Random(seed)
    cells = ["", " ", "a", "b", "a b", "1", "2", "x,y", "Total", "k: v", "b-a", "", "Q1", "y"]

    def table(rows=None):
        return [[rng.choice(cells) for _ in range(rng.randint(0, 5))] for _ in range(rows or rng.randint(0, 7))]

    for _ in range(300):
        tgt = Target.of(rng.choice([table(), [[""] + ["a", "b"], ["x", "1", "2"], ["y", "2", ""]]]))
        t = table()
        assert distance(t, tgt) == _reference_distance(t, tgt)
        h, lost = distance(t, tgt, max_lost=0)
        assert lost == _reference_distance(t, tgt)[1] and (h is None) == (lost > 0)
