"""The rollout holds what it grades compactly (issue 34 item 3): a wave of programs whose outputs
are at the sandbox's cell limit (100,000 cells, ~6.5 MB each once decoded) costs the parent a few
decoded outputs at a time, not every output of the chunk, and the trace still holds every output
exactly. Measured with tracemalloc over the whole rollout (grading, prompts, writing records)."""
import json
import tracemalloc

from cases import Case
from sandbox import Sandbox
from tracegen.rollout import RolloutConfig, rollout

from scripted import JSON_X, ScriptedBackend, program

ROWS, COLS = 100, 1000  # 100,000 cells: OutputLimits.max_cells
BIG = program(f"def transform(table):\n"
              f"    tag = table[0][0]\n"
              f"    return [[tag + '%03d%04d' % (r, c) for c in range({COLS})] for r in range({ROWS})]")
N = 4
CASES = [Case(f"m{i}/m{i}_{i}", f"m{i}", [[f"a{i}"]], [["no"]], [[f"t{i}"]], [["no"]]) for i in range(N)]


def _expected(tag: str) -> list[list[str]]:
    return [[tag + "%03d%04d" % (r, c) for c in range(COLS)] for r in range(ROWS)]


def test_a_wave_of_big_outputs_is_not_held_decoded(tmp_path):
    backend = ScriptedBackend(lambda r: JSON_X if r.kind == "direct" else BIG)
    path = tmp_path / "t.jsonl"
    with Sandbox(workers=2, start_timeout_s=1800) as sb:
        tracemalloc.start()
        try:
            rollout(CASES, {}, backend, sb, path, RolloutConfig(max_repairs=0, wave_size=N, progress=False,
                                                                exec_timeout_s=60))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    decoded = 6_000_000  # one output's objects: at least 60 bytes a cell
    # all 2N outputs held at once (as rounds holding run_many's results did) is 8 x 6 MB; here at
    # most a few: those being graded, and one record's two while it is written
    assert peak < 5 * decoded, f"peak {peak / 1e6:.0f} MB for {2 * N} outputs of ~{decoded / 1e6:.0f} MB"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["case_id"] for r in records] == [c.case_id for c in CASES]
    for i, rec in enumerate(records):
        (rnd,) = rec["rounds"]
        assert rnd["visible"]["ok"] and rnd["visible"]["error"] == "wrong_output"
        assert rnd["visible"]["output"] == _expected(f"a{i}")
        assert rnd["test"]["ok"] and rnd["test_output"] == _expected(f"t{i}")
