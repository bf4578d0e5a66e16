"""The generation cache: a second identical run generates nothing; keys cover what changes outputs."""
import os
from dataclasses import replace

import pytest

from tracegen.backends.base import Backend, BackendConfig, Completion, GenerationRequest, Task
from tracegen.backends.cache import CachedBackend, maybe_cached
from tracegen.prompts import direct_messages, write_messages


class CountingBackend(Backend):
    """Deterministic text from the prompt; records every batch it is asked to generate."""

    name = "counting"

    def __init__(self, config):
        super().__init__(config)
        self.batches = []

    def generate(self, requests):
        self.batches.append(list(requests))
        return [Completion(f"answer to {r.messages[-1]['content'][-12:]!r} #{r.sample}", 10 + i, 3, 5.0,
                           "length" if r.sample == 9 else "stop") for i, r in enumerate(requests)]


def _requests(n, kind="direct"):
    build = direct_messages if kind == "direct" else write_messages
    tasks = [Task.from_tables(f"fam/c{i}", [["a", str(i)]], [[str(i), "a"]], [["b", str(i)]]) for i in range(n)]
    return [GenerationRequest(kind, build(t), t) for t in tasks]


def test_second_identical_run_generates_nothing(tmp_path):
    cfg = BackendConfig(name="counting", model="m")
    first = CachedBackend(CountingBackend(cfg), str(tmp_path))
    reqs = _requests(5) + _requests(3, "write")
    out1 = first.generate(reqs)
    assert len(first.inner.batches) == 1 and len(first.inner.batches[0]) == 8
    assert not any(c.cached for c in out1)
    # a new process: fresh wrapper and inner backend over the same folder
    second = CachedBackend(CountingBackend(cfg), str(tmp_path))
    out2 = second.generate(reqs)
    assert second.inner.batches == []
    assert (second.hits, second.misses) == (8, 0)
    assert all(c.cached for c in out2)
    strip = lambda cs: [(c.text, c.prompt_tokens, c.completion_tokens, c.latency_ms, c.finish_reason) for c in cs]
    assert strip(out1) == strip(out2)


def test_only_misses_go_to_the_backend_in_one_batch_and_in_order(tmp_path):
    b = CachedBackend(CountingBackend(BackendConfig(model="m")), str(tmp_path))
    reqs = _requests(6)
    b.generate(reqs[::2])
    out = b.generate(reqs)
    assert [len(x) for x in b.inner.batches] == [3, 3]
    assert b.inner.batches[1] == reqs[1::2]
    assert [c.cached for c in out] == [True, False] * 3
    assert [c.text for c in out] == [c.text for c in CountingBackend(b.config).generate(reqs)]


def test_a_streaming_backend_streams_through_the_cache(tmp_path):
    class Streaming(CountingBackend):
        streams = True

        def generate_iter(self, requests):  # last first, as a pool may finish them
            yield from reversed(list(enumerate(self.generate(requests))))

    cfg = BackendConfig(name="counting", model="m")
    reqs = _requests(4)
    first = CachedBackend(Streaming(cfg), str(tmp_path))
    first.generate(reqs[:2])  # two hits for the next call
    assert first.streams
    got = list(first.generate_iter(reqs))
    assert [i for i, _ in got] == [0, 1, 3, 2]  # the hits, then the misses as they come
    assert [c.cached for _, c in got] == [True, True, False, False]
    assert len(first.inner.batches[-1]) == 2  # only the misses were generated
    again = CachedBackend(Streaming(cfg), str(tmp_path))
    assert sorted((i, c.text) for i, c in again.generate_iter(reqs)) == sorted((i, c.text) for i, c in got)
    assert again.inner.batches == [] and again.hits == 4  # each was stored as it came


@pytest.mark.parametrize("change", [
    dict(temperature=0.7), dict(top_p=0.9), dict(seed=1), dict(max_new_tokens=99),
    dict(enable_thinking=True), dict(model="other"), dict(load_in_4bit=True),
])
def test_sampling_changes_miss(tmp_path, change):
    base = BackendConfig(name="hf", model="m")  # hf: the one backend that reads load_in_4bit
    reqs = _requests(2)
    CachedBackend(CountingBackend(base), str(tmp_path)).generate(reqs)
    again = CachedBackend(CountingBackend(base), str(tmp_path))
    again.generate(reqs)
    assert again.misses == 0
    changed = CachedBackend(CountingBackend(replace(base, **change)), str(tmp_path))
    changed.generate(reqs)
    assert changed.hits == 0 and changed.misses == 2


def test_sample_index_and_messages_are_part_of_the_key(tmp_path):
    b = CachedBackend(CountingBackend(BackendConfig(model="m")), str(tmp_path))
    r = _requests(1)[0]
    keys = {b.key(r), b.key(replace(r, sample=1)), b.key(replace(r, messages=r.messages[:1]))}
    assert len(keys) == 3
    assert b.key(r) == b.key(replace(r, task=Task.from_tables("other", [], [], [])))  # the text is what counts


def test_entries_are_whole_files_and_bad_ones_regenerate(tmp_path):
    b = CachedBackend(CountingBackend(BackendConfig(model="m")), str(tmp_path))
    reqs = _requests(3)
    b.generate(reqs)
    files = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
    assert len(files) == 3 and all(f.endswith(".json") for f in files)  # no temp files left
    with open(b._path(b.key(reqs[1])), "w") as fh:
        fh.write('{"text": "torn')
    out = b.generate(reqs)
    assert [c.cached for c in out] == [True, False, True]
    assert CachedBackend(CountingBackend(b.config), str(tmp_path)).generate(reqs)[1].cached


def test_maybe_cached_and_passthrough(tmp_path):
    inner = CountingBackend(BackendConfig(model="m"))
    assert maybe_cached(inner, None) is inner
    wrapped = maybe_cached(inner, str(tmp_path / "c"))
    assert isinstance(wrapped, CachedBackend)
    assert (wrapped.name, wrapped.model_name) == ("counting", "m")
    assert wrapped.generate([]) == [] and inner.batches == []


def test_a_whole_rollout_rerun_generates_nothing(tmp_path):
    """Two runs of the rollout loop over the same cache: the second asks the model for nothing."""
    rollout = pytest.importorskip("tracegen.rollout")
    sandbox = pytest.importorskip("sandbox")
    from cases import Case

    from scripted import JSON_X, ScriptedBackend, program

    def Scripted(config):
        return ScriptedBackend(lambda r: JSON_X if r.kind == "direct" else program("def transform(table):\n"
                                                                               "    return table[:1]"),
                               tokens=(9, 4), config=config)

    cases = [Case.from_tables(f"f/c{i}", "f", [["a"], ["b"]], [["a"]], [[str(i)], ["z"]], [[str(i)]]) for i in range(3)]
    cfg = rollout.RolloutConfig(max_repairs=1, progress=False)
    records, backends = [], []
    with sandbox.Sandbox(workers=1) as sb:
        for _ in range(2):
            backends.append(CachedBackend(Scripted(BackendConfig(model="m")), str(tmp_path / "cache")))
            records.append(rollout.trace_cases(cases, {}, backends[-1], sb, cfg))
    assert len(backends[0].inner.batches) >= 2 and backends[0].hits == 0
    assert backends[1].inner.batches == [] and backends[1].hits == backends[0].misses
    drop = lambda recs: [{k: v for k, v in r.items() if k != "totals"} | {"rounds": [r2["raw"] for r2 in r["rounds"]]} for r in recs]
    assert drop(records[0]) == drop(records[1])


def test_the_run_memo_streams_each_new_request_once_and_remembers_it():
    from tracegen.probe import Memo

    class Streaming(CountingBackend):
        streams = True

        def generate_iter(self, requests):
            yield from reversed(list(enumerate(self.generate(requests))))

    memo = Memo(Streaming(BackendConfig(name="counting", model="m")))
    reqs = _requests(3)
    reqs.insert(2, reqs[0])  # the same request twice in one batch
    assert memo.streams
    got = dict(memo.generate_iter(reqs))
    assert sorted(got) == [0, 1, 2, 3] and got[2].text == got[0].text
    assert [len(b) for b in memo.inner.batches] == [3]  # each new request generated once
    again = dict(memo.generate_iter(reqs))
    assert {i: c.text for i, c in again.items()} == {i: c.text for i, c in got.items()}
    assert [len(b) for b in memo.inner.batches] == [3]  # remembered: nothing generated
