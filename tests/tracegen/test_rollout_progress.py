"""Progress during long generation: each stage counts its finished requests (generations) as the
backend reports them, so the line moves before any case is done (the SmolLM2 smoke run sat at
``0/4 cases`` for minutes). Checked on the progress object's state and its line, not on timing."""
import io

import pytest

from cases import Case
from tracegen import rollout as rollout_mod
from tracegen.progress import Progress
from tracegen.rollout import RolloutConfig, rollout

from scripted import ScriptedBackend

WRONG = "```python\ndef transform(table):\n    return table\n```"
CASES = [Case.from_tables(f"f{i}/f{i}_{i}", f"f{i}", [["a", "1"], ["b", "2"]], [["a"], ["b"]], [["c", "3"]], [["c"]])
         for i in range(4)]


class OneByOne(ScriptedBackend):
    """Finishes its requests one at a time and says so (``report_done``) as a model backend does;
    ``seen`` records the progress bar as each request starts."""

    def __init__(self, bars: list, report: bool = True):
        super().__init__(self._answer)
        self.bars, self.report, self.states = bars, report, []

    def _answer(self, r):
        bar = self.bars[-1]
        self.states.append((r.kind, bar.done, bar.generations, bar.line()))
        return '```json\n[["x"]]\n```' if r.kind == "direct" else WRONG

    def generate(self, requests):
        out = []
        for r in requests:
            out += super().generate([r])
            if self.report:
                self.report_done(1)
        return out


@pytest.fixture
def bars(monkeypatch):
    made = []

    class Recorded(Progress):
        def __init__(self, *a, **kw):
            super().__init__(*a, **{**kw, "stream": io.StringIO(), "bar": False})
            made.append(self)

    monkeypatch.setattr(rollout_mod, "Progress", Recorded)
    return made


def _trace(backend, tmp_path):
    from sandbox import Sandbox

    tmp_path.mkdir(parents=True, exist_ok=True)
    with Sandbox(workers=1) as sb:
        rollout(CASES, {}, backend, sb, tmp_path / "t.jsonl", RolloutConfig(max_repairs=1, wave_size=8))


def test_generations_move_while_no_case_has_finished(bars, tmp_path):
    backend = OneByOne(bars)
    _trace(backend, tmp_path)
    direct = [s for s in backend.states if s[0] == "direct"]
    writes = [s for s in backend.states if s[0] == "write"]
    fixes = [s for s in backend.states if s[0] == "fix"]
    # as the k-th request of a stage starts, k - 1 of its generations are done and no case is
    assert [(done, gens) for _, done, gens, _ in direct] == [(0, (k, 4)) for k in range(4)]
    assert [(done, gens) for _, done, gens, _ in writes] == [(0, (k, 4)) for k in range(4)]
    assert [(done, gens) for _, done, gens, _ in fixes] == [(0, (k, 4)) for k in range(4)]
    line = writes[3][3]
    assert line.startswith("tracing: 0/4 cases") and "first programs, generations 3/4" in line, line
    assert "repair round 1, generations 2/4" in fixes[2][3]
    assert bars[-1].done == 4 and bars[-1].generations == (4, 4)


def test_a_backend_that_reports_nothing_is_counted_when_its_call_returns(bars, tmp_path):
    backend = OneByOne(bars, report=False)
    _trace(backend, tmp_path)
    # the whole wave is one call: nothing moves inside it, and the stage is complete after it
    assert {gens for kind, _, gens, _ in backend.states if kind == "write"} == {(0, 4)}
    assert {gens for kind, _, gens, _ in backend.states if kind == "fix"} == {(0, 4)}
    assert bars[-1].generations == (4, 4)
    assert backend.on_request_done is None  # the rollout's hook is gone after tracing


def test_cache_hits_count_at_once_and_misses_as_the_backend_reports_them(bars, tmp_path):
    from tracegen.backends.cache import CachedBackend

    first = OneByOne(bars)
    _trace(CachedBackend(first, str(tmp_path / "cache")), tmp_path / "a")
    assert [gens for kind, _, gens, _ in first.states if kind == "write"] == [(k, 4) for k in range(4)]
    again = OneByOne(bars)
    _trace(CachedBackend(again, str(tmp_path / "cache")), tmp_path / "b")
    assert again.states == [] and bars[-1].generations == (4, 4)  # every request a hit


def test_progress_line_shows_the_stage_and_its_generations():
    out = io.StringIO()
    p = Progress(4, "tracing", stream=out, bar=False)
    p.set_stage("first programs")
    p.set_generations(3, 8)
    assert p.line().startswith("tracing: 0/4 cases, ") and p.line().endswith("first programs, generations 3/8")
    p.close()


def test_decoding_steps_show_until_a_request_ends():
    p = Progress(4, "tracing", stream=io.StringIO(), bar=False)
    p.set_stage("direct answers")
    p.set_generations(0, 4)
    p.set_decoding(57, 96)
    assert p.line().endswith("direct answers, generations 0/4, decoding token 57/96")
    p.set_generations(4, 4)  # the batch returned: its token count is stale
    assert p.line().endswith("direct answers, generations 4/4")
    p.close()


def test_no_time_estimate_before_a_whole_wave_is_done():
    """Cases of one wave finish together at its end (a few early): a rate from the early ones
    promised ~46,000 s for a trace that ended minutes later, so no estimate until a wave is done."""
    p = Progress(50, "tracing", stream=io.StringIO(), bar=False, eta_after=50)
    p.t0 -= 3000
    p.update(4)
    assert "left" not in p.line()
    p.close()
    q = Progress(128, "tracing", stream=io.StringIO(), bar=False, eta_after=64)
    q.t0 -= 100
    q.update(64)
    assert "~100s left" in q.line()
    q.close()
