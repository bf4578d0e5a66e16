"""The synth backend answers each request kind with well-formed, deterministic completions."""
from __future__ import annotations

import json

import pytest

from tracegen.backends import BackendConfig, Feedback, GenerationRequest, Task, get_backend
from tracegen.backends.synth import SynthBackend, count_tokens
from tracegen.synth import read_history, run_program

CRIME = Task.from_tables(
    "crime_1",
    [["Reported crime in Alabama", ""], ["", ""], ["2004", "4029.3"], ["2005", "3900"],
     ["Reported crime in Alaska", ""], ["", ""], ["2004", "3370.9"], ["2005", "3615"]],
    [["Alabama", "2004", "4029.3"], ["Alabama", "2005", "3900"], ["Alaska", "2004", "3370.9"], ["Alaska", "2005", "3615"]],
    [["Reported crime in Iowa", ""], ["", ""], ["1999", "1"], ["2000", "2"]],
)
FOLD = Task.from_tables("fold_1", [["Name", "Math", "Art"], ["Ann", "1", "2"], ["Di", "7", "8"]],
            [["Ann", "Math", "1"], ["Ann", "Art", "2"], ["Di", "Math", "7"], ["Di", "Art", "8"]],
            [["Name", "Math", "Art"], ["Bob", "3", "4"], ["Cy", "5", "6"]])
MESSAGES = [{"role": "system", "content": "You transform tables."}, {"role": "user", "content": "Here: [[\"a\"]]"}]


def _code(text: str) -> str:
    parsing = pytest.importorskip("tracegen.parsing")
    parsed = parsing.parse_code(text)
    assert parsed.status == "ok", parsed.detail
    return parsed.value


def _run(code: str, table):
    namespace: dict = {}
    exec(code, namespace)
    return namespace["transform"]([list(r) for r in table])


def _backend(**kw) -> SynthBackend:
    return SynthBackend(BackendConfig(**kw))


def test_registry_builds_it():
    backend = get_backend(BackendConfig(name="synth"))
    assert isinstance(backend, SynthBackend) and backend.name == "synth"


def test_direct_is_a_json_table():
    comp = _backend().generate([GenerationRequest("direct", MESSAGES, FOLD)])[0]
    table = json.loads(comp.text)
    assert table == [["Bob", "Math", "3"], ["Bob", "Art", "4"], ["Cy", "Math", "5"], ["Cy", "Art", "6"]]
    assert comp.prompt_tokens == sum(count_tokens(m["content"]) for m in MESSAGES) > 0
    assert comp.completion_tokens == count_tokens(comp.text) > 0 and comp.latency_ms >= 0
    assert comp.finish_reason == "stop"


def test_write_gives_a_sentence_and_a_working_program():
    comp = _backend().generate([GenerationRequest("write", MESSAGES, FOLD)])[0]
    assert comp.text.startswith("This program reproduces the example")
    code = _code(comp.text)
    assert _run(code, FOLD.input_table) == FOLD.output_table
    assert _run(code, FOLD.test_table)[0] == ["Bob", "Math", "3"]


def test_fix_uses_the_bigger_budget_and_never_repeats_itself():
    backend = _backend(synth_write_nodes=200, synth_fix_nodes=40_000)
    write = backend.generate([GenerationRequest("write", MESSAGES, CRIME)])[0]
    first = _code(write.text)
    produced = _run(first, CRIME.input_table)
    assert produced != CRIME.output_table
    assert "closest" in write.text
    feedback = Feedback("wrong_output", "output differs from the public example", produced)
    fix = backend.generate([GenerationRequest("fix", MESSAGES, CRIME, round=1, previous_code=first,
                                              feedback=feedback)])[0]
    second = _code(fix.text)
    assert _run(second, CRIME.input_table) == CRIME.output_table
    assert _run(second, CRIME.test_table) == [["Iowa", "1999", "1"], ["Iowa", "2000", "2"]]
    old_program, _ = read_history(first)
    new_program, tried = read_history(second)
    assert new_program != old_program and len(tried) == 2  # the new one and the one it replaced


def test_fix_after_a_crash_starts_over_and_handles_foreign_code():
    backend = _backend()
    feedback = Feedback("exception", "ValueError: boom")
    foreign = "def transform(table):\n    raise ValueError('boom')\n"
    comp = backend.generate([GenerationRequest("fix", MESSAGES, FOLD, round=1, previous_code=foreign,
                                               feedback=feedback)])[0]
    assert _run(_code(comp.text), FOLD.input_table) == FOLD.output_table


def test_batches_keep_order_and_output_is_deterministic():
    reqs = [GenerationRequest("write", MESSAGES, CRIME), GenerationRequest("direct", MESSAGES, FOLD),
            GenerationRequest("write", MESSAGES, FOLD)]
    a = _backend().generate(reqs)
    b = _backend().generate(reqs)
    assert [c.text for c in a] == [c.text for c in b]
    assert a[1].text.startswith("[[")
    assert [c.completion_tokens for c in a] == [c.completion_tokens for c in b]


def test_other_samples_are_seeded():
    backend = _backend(seed=3)
    req = GenerationRequest("write", MESSAGES, CRIME, sample=1)
    assert backend.generate([req])[0].text == backend.generate([req])[0].text


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError):
        _backend().generate([GenerationRequest("chat", MESSAGES, FOLD)])  # type: ignore[arg-type]


def test_program_answers_match_in_process_semantics():
    comp = _backend().generate([GenerationRequest("write", MESSAGES, CRIME)])[0]
    program, _ = read_history(_code(comp.text))
    assert _run(_code(comp.text), CRIME.test_table) == run_program(CRIME.test_table, program)
