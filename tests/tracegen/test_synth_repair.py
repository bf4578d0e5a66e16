"""A repair continues its chain's search: FIX k is the search after k fresh budgets, so a second
repair can pass where the first failed; the answer is the same from a paused search, a fresh
backend, or the pool."""
from __future__ import annotations

from pathlib import Path

import pytest

from cases import load_cases
from tracegen.backends import BackendConfig, Feedback, GenerationRequest, Task
from tracegen.backends.synth import FIX_SHARES, SynthBackend
from tracegen.synth import read_history, run_program, search, stages

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "user", "content": "repair it"}]


def _case(case_id: str):
    return next(c for c in load_cases(str(ROOT / "cases" / "foofah")) if c.case_id == case_id)


def _task(case) -> Task:
    return Task.from_tables(case.case_id, case.input_table, case.output_table, case.test_table)


def _code(text: str) -> str:
    return text.split("```python\n", 1)[1].rsplit("```", 1)[0]


def _chain(backend, task, repairs=2, sample=0):
    """WRITE, then FIX while the program fails the public example (as the rollout does)."""
    comps, prev = [], None
    for rnd in range(repairs + 1):
        req = GenerationRequest("write", MESSAGES, task, sample=sample) if rnd == 0 else GenerationRequest(
            "fix", MESSAGES, task, round=rnd, previous_code=prev, sample=sample,
            feedback=Feedback("wrong_output", "differs", None))
        comp = backend.generate([req])[0]
        program, _ = read_history(_code(comp.text))
        passed = run_program(task.input_table, program) == task.output_table
        comps.append((comp, passed))
        if passed:
            break
        prev = _code(comp.text)
    return comps


def _same(a, b) -> None:
    assert [s[:3] for s in a.solutions] == [s[:3] for s in b.solutions]
    assert a.near == b.near and a.nodes == b.nodes and a.found_at == b.found_at


@pytest.mark.parametrize("case_id,first,more,want", [
    ("exp0_18_2", 3000, 3000, 1),  # the solution is first seen in the second stage
    ("exp0_18_2", 1000, 500, 2),  # eager (want > 1)
    ("exp0_17_4", 1500, 1500, 1),  # no solution in either stage
])
def test_a_continued_search_is_the_search_of_the_whole_budget(case_id, first, more, want):
    case = _case(case_id)
    ex = [(case.input_table, case.output_table)]
    run = stages(ex, max_nodes=first, want=want)
    one = next(run)
    _same(one, search(ex, max_nodes=first, want=want))
    assert one.spent == one.nodes
    two = run.send(more)
    run.close()
    _same(two, search(ex, max_nodes=first + more, want=want))
    assert two.spent == two.nodes - one.nodes


def test_a_second_repair_passes_where_the_first_failed():
    # known answer: each repair gets 3,000 fresh nodes; the program is first seen past 3,723
    task = _task(_case("exp0_18_2"))
    cfg = dict(synth_write_nodes=50, synth_fix_nodes=3000 * FIX_SHARES, extra={"synth_workers": 1})
    chain = _chain(SynthBackend(BackendConfig(**cfg)), task)
    assert [p for _, p in chain] == [False, False, True]
    assert [c.search_nodes for c, _ in chain] == [50, 3000, 3000]
    assert chain[2][0].text.startswith("The previous program was wrong.")
    program, tried = read_history(_code(chain[2][0].text))
    assert len(tried) == 3 and run_program(task.test_table, program)[0][:3] == ["101102", "TECH HARDWARE", "66001"]


def test_the_second_repair_is_the_same_from_a_paused_search_a_fresh_backend_and_the_pool():
    task = _task(_case("exp0_18_2"))
    cfg = dict(synth_write_nodes=50, synth_fix_nodes=3000 * FIX_SHARES)
    warm = SynthBackend(BackendConfig(**cfg, extra={"synth_workers": 1}))
    chain = _chain(warm, task)
    again = _chain(warm, task)  # served from the kept stages
    got = [(c.text, c.search_nodes) for c, _ in chain]
    assert [(c.text, c.search_nodes) for c, _ in again] == got
    # a fresh backend, asked for the second repair alone, searches again through both stages
    req = GenerationRequest("fix", MESSAGES, task, round=2, previous_code=_code(chain[1][0].text),
                            feedback=Feedback("wrong_output", "differs", None))
    fresh = SynthBackend(BackendConfig(**cfg, extra={"synth_workers": 1})).generate([req])[0]
    assert (fresh.text, fresh.search_nodes) == got[2]
    # the pool: two chains at once, each repair on the worker that holds its search (or not)
    other = _task(_case("exp0_17_4"))
    serial = SynthBackend(BackendConfig(**cfg, extra={"synth_workers": 1}))
    with SynthBackend(BackendConfig(**cfg, extra={"synth_workers": 2})) as pooled:
        for backend in (serial, pooled):
            reqs = [GenerationRequest("write", MESSAGES, t) for t in (task, other)]
            backend.results = [backend.generate(reqs)]
            for rnd in (1, 2):
                reqs = [GenerationRequest("fix", MESSAGES, r.task, round=rnd, previous_code=_code(c.text),
                                          feedback=Feedback("wrong_output", "differs", None))
                        for r, c in zip(reqs, backend.results[-1])]
                backend.results.append(backend.generate(reqs))
        assert pooled._pools
        assert [[(c.text, c.search_nodes) for c in w] for w in pooled.results] == \
            [[(c.text, c.search_nodes) for c in w] for w in serial.results]
    assert [c.text for c in serial.results[2]][0] == got[2][0]
