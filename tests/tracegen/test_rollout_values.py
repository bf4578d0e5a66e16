"""The rollout on tasks of any JSON value with several public examples (schema v4): every example
run, a program passes only when it reproduces every one, the feedback a repair was shown is in the
record and is the prompt's text, direct answers are read against the examples' value type and
graded by exact equality, and synth declines what its table DSL cannot answer."""
import json

from cases import Case, Example
from sandbox.result import RunResult
from tracegen.backends import BackendConfig, get_backend
from tracegen.records import validate_record
from tracegen.rollout import RolloutConfig, trace_cases

from scripted import program


class InProcessSandbox:
    """Runs test programs in this process (trusted code), honouring the item's kind and entry: the
    rollout's side of the sandbox contract, whatever sandbox build is installed."""

    def __init__(self):
        self.items = []

    def iter_many(self, items, timeout_s=1.5, memory_mb=256):
        for j, item in enumerate(items):
            code, x = item[0], item[1]
            kind, entry = (item[2] if len(item) > 2 else "table"), (item[3] if len(item) > 3 else "transform")
            self.items.append((kind, entry))
            ns = {}
            try:
                exec(code, ns)
                out = ns[entry](json.loads(json.dumps(x)))
                yield j, RunResult(True, json.loads(json.dumps(out)), None, "", 0.5)
            except Exception as e:  # noqa: BLE001 - the program's own error
                yield j, RunResult(False, None, "exception", f"{type(e).__name__}: {e}", 0.5)


# 1D-ARC style: shift the coloured run one cell right
SHIFT = Case("arc/shift#0", "shift", (
    Example([[0, 3, 3, 0, 0]], [[0, 0, 3, 3, 0]]),
    Example([[5, 5, 0, 0]], [[0, 5, 5, 0]]),
    Example([[0, 0, 7, 0, 0, 0]], [[0, 0, 0, 7, 0, 0]]),
), [[0, 4, 4, 4, 0, 0]], [[0, 0, 4, 4, 4, 0]], value_type="grid")
RIGHT = "def transform(grid):\n    return [[0] + row[:-1] for row in grid]"
# right on examples 1 and 3, wrong on example 2 (it leaves a row that starts coloured alone)
WRONG_ON_2 = "def transform(grid):\n    return [[row[0]] + row[:-1] if row[0] == 0 else row for row in grid]"


def _trace(answer, cases=(SHIFT,), max_repairs=1, sb=None):
    from scripted import ScriptedBackend

    backend = ScriptedBackend(answer)
    box = sb or InProcessSandbox()
    recs = trace_cases(list(cases), {}, backend, box, RolloutConfig(max_repairs=max_repairs, progress=False))
    for r in recs:
        validate_record(r)
    return recs, backend, box


def test_a_program_passes_only_when_it_reproduces_every_example_and_repairs_see_the_failing_one():
    answers = {("direct", 0, 0): "```\n0 0 4 4 4 0\n```", ("write", 0, 0): program(WRONG_ON_2),
               ("fix", 1, 0): program(RIGHT)}
    [rec], backend, box = _trace(answers)
    assert rec["schema_version"] == 4
    assert rec["task"] == {"examples": [{"input": e.input, "output": e.output} for e in SHIFT.examples],
                           "test_input": SHIFT.test_input, "value_type": "grid", "entry": "transform"}
    assert box.items and all(kind == "grid" for kind, _ in box.items)  # the sandbox got the task's kind
    w, f = rec["rounds"]
    assert not w["visible_pass"] and w["feedback"] is None
    assert [r["error"] for r in w["visible_runs"]] == [None, "wrong_output", None]
    assert w["visible"]["error"] == "wrong_output" and w["visible"]["message"].startswith("example 2 of 3")
    assert w["visible"]["output"] == [[5, 5, 0, 0]]  # the failing example's output (wrong: kept)
    # the repair was shown the recorded text, about example 2, with grids as rows of numbers
    assert "example 2" in f["feedback"] and "5 5 0 0" in f["feedback"] and "0 5 5 0" in f["feedback"]
    assert f["feedback"] in backend.seen[("fix", 1, 0)][-1]["content"]
    assert f["visible_pass"] and all(r["ok"] and r["error"] is None for r in f["visible_runs"])
    # the first program is right on the new input, yet fails example 2: not a program to commit
    assert rec["hidden"]["rounds"] == [{"hidden_exact": True}, {"hidden_exact": True}]
    # the direct answer was read as a grid and graded by exact equality
    assert rec["direct"]["value"] == [[0, 0, 4, 4, 4, 0]] and rec["hidden"]["direct_exact"] is True
    # every example is in the prompts, as rows of numbers
    user = backend.seen[("write", 0, 0)][-1]["content"]
    assert all(f"Example {k} input:" in user for k in (1, 2, 3)) and "0 0 7 0 0 0" in user
    assert "def transform(grid):" in user


def test_values_are_graded_by_exact_json_equality():
    upper = Case("s/up", "up", (Example("ab", "AB"), Example("x y", "X Y")), "qz", "QZ", value_type="json",
                 entry="solve")
    answers = {("direct", 0, 0): '```json\n"QZ"\n```',
               ("write", 0, 0): program("def solve(x):\n    return x.upper()")}
    [rec], backend, box = _trace(answers, cases=(upper,), max_repairs=0)
    assert box.items and set(box.items) == {("json", "solve")}
    assert rec["rounds"][0]["visible_pass"] and rec["rounds"][0]["test_output"] == "QZ"
    assert rec["hidden"]["direct_exact"] is True and rec["hidden"]["rounds"][0]["hidden_exact"] is True
    assert "def solve(x):" in backend.seen[("write", 0, 0)][-1]["content"]
    # a number is not its string, a boolean not its number
    numbers = Case("n/one", "n", (Example([1], 1),), [2], 1, value_type="json")
    [rec], _, _ = _trace({("direct", 0, 0): '```json\n"1"\n```',
                          ("write", 0, 0): program("def transform(x):\n    return True")}, cases=(numbers,),
                         max_repairs=0)
    assert rec["direct"]["value"] is None and rec["direct"]["parse"]["status"] == "failed"  # a string, expected a number
    assert not rec["rounds"][0]["visible_pass"] and rec["hidden"]["rounds"][0]["hidden_exact"] is False


def test_one_table_example_records_hold_no_visible_runs_and_write_rounds_no_feedback():
    case = Case.from_tables("t/t_1", "t", [["a", "1"]], [["1"]], [["b", "2"]], [["2"]])
    [rec], backend, _ = _trace({("direct", 0, 0): '```json\n[["2"]]\n```',
                                ("write", 0, 0): program("def transform(table):\n    return table"),
                                ("fix", 1, 0): program("def transform(table):\n    return [r[1:] for r in table]")},
                               cases=(case,))
    assert "visible_runs" not in rec["rounds"][0] and rec["rounds"][0]["feedback"] is None
    assert rec["rounds"][1]["feedback"].startswith("The function ran on the example input")
    assert rec["rounds"][1]["visible_pass"] and rec["direct"]["value"] == [["2"]]


def test_synth_declines_what_its_table_dsl_cannot_answer():
    backend = get_backend(BackendConfig(name="synth", extra={"synth_workers": 1}))
    try:
        box = InProcessSandbox()
        [rec] = trace_cases([SHIFT], {}, backend, box, RolloutConfig(max_repairs=1, progress=False))
    finally:
        backend.close()
    validate_record(rec)
    assert rec["direct"]["finish_reason"] == "declined" and rec["direct"]["parse"]["status"] == "declined"
    assert rec["direct"]["value"] is None and rec["hidden"]["direct_exact"] is False
    for r in rec["rounds"]:
        assert r["finish_reason"] == "declined" and r["parse"]["status"] == "declined" and r["code"] is None
        assert r["visible"]["error"] == "parse" and not r["visible_pass"]
    assert box.items == []  # nothing to run


def test_synth_answers_a_table_task_with_several_examples():
    """Its search gets every example; its program runs on each."""
    two = Case("t/two", "t", (Example([["a", "1"], ["b", "2"]], [["a"]]), Example([["c", "3"], ["d", "4"]], [["c"], ["d"]])),
               [["e", "5"]], [["e"]])
    backend = get_backend(BackendConfig(name="synth", extra={"synth_workers": 1}))
    try:
        [rec] = trace_cases([two], {}, backend, InProcessSandbox(), RolloutConfig(max_repairs=0, progress=False))
    finally:
        backend.close()
    validate_record(rec)
    assert rec["rounds"][0]["finish_reason"] != "declined"
    assert len(rec["rounds"][0]["visible_runs"]) == 2


def test_the_sft_export_takes_a_grid_task_with_its_recorded_feedback():
    from controller.report.sft import verified_conversations

    answers = {("direct", 0, 0): "```\n0 0 4 4 4 0\n```", ("write", 0, 0): program(WRONG_ON_2),
               ("fix", 1, 0): program(RIGHT)}
    [rec], backend, _ = _trace(answers)
    rec["split"] = "train"
    rows = {row["kind"]: row for row in verified_conversations(rec)}
    assert set(rows) == {"direct", "repair"}
    repair = rows["repair"]
    assert repair["prompt"] == backend.seen[("fix", 1, 0)]  # the very prompt the model was sent
    assert rec["rounds"][1]["feedback"] in repair["prompt"][-1]["content"]
    assert repair["completion"][0]["content"] == rec["rounds"][1]["raw"]
