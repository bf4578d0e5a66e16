"""Prompts carry the example, the new input and the answer format; repair feedback is compact."""
import json

from tracegen.backends.base import Feedback, Task
from tracegen.parsing import parse_table
from tracegen.prompts import (
    MAX_FEEDBACK_CHARS, describe_feedback, direct_messages, feedback_from_run, fix_messages, render_table,
    write_messages,
)

TASK = Task.from_tables("fam/c_1", [["a b", "1"]], [["b", "a"]], [["x y", "2"], ["p q", "3"]])


def test_render_table_is_json_one_row_per_line():
    text = render_table([["a", "é"], ["", "x\"y"]])
    assert json.loads(text) == [["a", "é"], ["", "x\"y"]]
    assert text.count("\n") == 3
    assert render_table([]) == "[]"


def test_direct_and_write_show_tables_and_format():
    for msgs in (direct_messages(TASK), write_messages(TASK)):
        assert [m["role"] for m in msgs] == ["system", "user"]
        user = msgs[1]["content"]
        for table in (TASK.input_table, TASK.output_table, TASK.test_table):
            assert render_table(table) in user
    assert "```json" in direct_messages(TASK)[1]["content"]
    assert "def transform(table):" in write_messages(TASK)[1]["content"]
    assert "```python" in write_messages(TASK)[1]["content"]


def test_fix_shows_previous_code_and_error():
    fb = Feedback("exception", "IndexError: list index out of range")
    msgs = fix_messages(TASK, "def transform(table):\n    return table[5]", fb)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert "return table[5]" in msgs[2]["content"]
    assert "exception" in msgs[3]["content"] and "IndexError" in msgs[3]["content"]


def test_fix_without_code_says_so():
    msgs = fix_messages(TASK, "", Feedback("parse", "no code found"))
    assert msgs[2]["content"] == "(no code)"
    assert "transform" in msgs[3]["content"]


def test_feedback_diff_names_rows():
    fb = feedback_from_run([["a", "1"], ["b", "2"]], [["a", "1"], ["b", "3"], ["c", "4"]], None, "")
    assert fb.error == "wrong_output" and fb.produced == [["a", "1"], ["b", "3"], ["c", "4"]]
    assert "Expected 2 rows x 2 cols, got 3 rows x 2 cols" in fb.message
    assert 'row 1: expected ["b","2"], got ["b","3"]' in fb.message
    assert 'unexpected extra row ["c","4"]' in fb.message
    assert "row 0" not in fb.message


def test_feedback_spots_order_and_transpose():
    assert "wrong order" in feedback_from_run([["a"], ["b"]], [["b"], ["a"]], None, "").message
    assert "transposed" in feedback_from_run([["a", "b"]], [["a"], ["b"]], None, "").message


def test_feedback_is_capped():
    big = [[str(i) * 300] for i in range(200)]
    fb = feedback_from_run([["x"]] * 200, big, None, "")
    assert len(fb.message) <= MAX_FEEDBACK_CHARS
    assert "more differing rows" in fb.message or "truncated" in fb.message
    err = feedback_from_run([["x"]], None, "exception", "E" * 10_000)
    assert err.error == "exception" and len(err.message) <= MAX_FEEDBACK_CHARS
    fix = fix_messages(TASK, "def transform(t): pass", err)
    assert len(fix[3]["content"]) < MAX_FEEDBACK_CHARS + 400


def test_feedback_error_and_missing_output():
    assert feedback_from_run([["x"]], None, "timeout", "took over 1.5 s").error == "timeout"
    assert feedback_from_run([["x"]], None, None, "").error == "bad_output"
    assert feedback_from_run([["x"]], [["x"]], None, "").error == "none"


def test_prompt_answer_round_trip():
    # what a model would paste back from the prompt's rendering parses to the same table
    assert parse_table(f"```json\n{render_table(TASK.test_table)}\n```").value == TASK.test_table


def test_wrong_output_category_still_gets_the_diff():
    fb = feedback_from_run([["a"]], [["b"]], "wrong_output", "output differs from the public example")
    assert fb.error == "wrong_output" and 'row 0: expected ["a"], got ["b"]' in fb.message


def test_new_input_crash_is_the_feedback_when_the_example_passes():
    from tracegen.prompts import feedback_from_run

    ex = [["a"]]
    fb = feedback_from_run(ex, ex, None, "", "exception", "IndexError: list index out of range")
    assert fb.error == "new_input_crash"
    text = fix_messages(TASK, "def transform(t):\n    return [t[0]]", fb)[-1]["content"]
    assert "reproduces the example output" in text and "new input" in text
    assert "IndexError: list index out of range" in text
    # a clean pass needs no repair; a wrong output that also crashes on the new input says both
    assert feedback_from_run(ex, ex, None, "").error == "none"
    both = describe_feedback(feedback_from_run(ex, [["b"]], None, "", "timeout", "took too long"))
    assert "differs from the example output" in both and "On the new input it failed too (error: timeout)" in both


def test_repair_history_shows_every_earlier_attempt_in_order():
    fb1, fb2 = Feedback("syntax", "SyntaxError: line 1"), Feedback("exception", "KeyError: 'x'")
    plain = fix_messages(TASK, "def transform(t): v2", fb2)
    with_history = fix_messages(TASK, "def transform(t): v2", fb2, [("def transform(t): v1", fb1)])
    assert fix_messages(TASK, "def transform(t): v2", fb2, None) == plain  # default unchanged
    assert [m["role"] for m in with_history] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "v1" in with_history[2]["content"] and "SyntaxError" in with_history[3]["content"]
    assert "v2" in with_history[4]["content"] and "KeyError" in with_history[5]["content"]
    assert with_history[-2:] == plain[-2:]


def test_feedback_for_an_empty_table_either_way():
    """A program that returns [] on the example (or an empty expected table) is ordinary repair
    feedback: it used to raise IndexError inside the rollout."""
    fb = feedback_from_run([["a", "1"]], [], None, "")
    assert fb.error == "wrong_output" and "Expected 1 rows x 2 cols, got 0 rows" in fb.message
    fb = feedback_from_run([], [["a"]], None, "")
    assert "Expected 0 rows, got 1 rows x 1 cols" in fb.message
