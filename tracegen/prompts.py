"""Chat prompts for the three request kinds, and the repair feedback a fix prompt shows.

A task of one example of string tables whose programs define ``transform`` (the Foofah shape,
``Task.one_table_example``) gets the table prompts below, unchanged. Any other task (several
examples, grids, strings, any JSON value, another entry function) gets the same three prompts
worded for values: every example shown in order, grids one row per line (``value_text``), the
direct answer asked in the examples' form, the program as ``def <entry>(<name>):``.

* ``direct_messages``: answer with the output table as JSON.
* ``write_messages``: write ``def transform(table):`` in one ```python block.
* ``fix_messages``: the write conversation, the previous code as the model's own turn, then
  what went wrong on the public example (error category and message, or a row diff) and, when
  the program crashed on the new input, that crash. With ``history`` (``--repair-history``)
  the earlier attempts and their feedback come first as alternating turns.

Tables are rendered as compact JSON, one row per line, so a model sees the exact strings it must
produce and the row structure at a glance. Feedback text is capped (``MAX_FEEDBACK_CHARS``) so
one huge wrong output cannot blow up the prompt.
"""
from __future__ import annotations

import json

from sandbox import allowed_modules

from .backends.base import Feedback, Table, Task
from .value_text import TYPE_WORDS, render_table, render_value, row_diff_lines, value_diff

MAX_FEEDBACK_CHARS = 1500
MAX_DIFF_ROWS = 6
MAX_ROW_CHARS = 200

SYSTEM_PROMPT = (
    "You transform tables by example. A table is a JSON list of rows; each row is a list of "
    "strings. You are shown one example input table with its output table, and a new input "
    "table that must be transformed the same way."
)

_WRITE_RULES = (
    "Write a Python function `def transform(table):` that takes an input table (a list of rows, "
    "each row a list of strings) and returns the output table in the same form. It must "
    "reproduce the example output exactly and work on the new input too, so do not hard-code "
    "values from the example. "
    + "You may import only these standard-library modules: " + ", ".join(allowed_modules())
    + "; do not read files or use the network. "
    "Answer with the complete function in one ```python code block."
)


SYSTEM_PROMPT_VALUES = (
    "You transform values by example. You are shown example inputs with their outputs, and a new "
    "input that must be transformed the same way. Each value is {what}."
)

_WRITE_RULES_VALUES = (
    "Write a Python function `{signature}` that takes an input value as shown (in Python: {python}) and "
    "returns the output value in the same form. It must reproduce every example output exactly and work on "
    "the new input too, so do not hard-code values from the examples. "
    + "You may import only these standard-library modules: " + ", ".join(allowed_modules())
    + "; do not read files or use the network. "
    "Answer with the complete function in one ```python code block."
)
_PYTHON_FORM = {"table": "a list of rows, each a list of str", "grid": "a list of rows, each a list of int",
                "json": "lists, dicts, str, int, float, bool or None, as JSON decodes it"}
_DIRECT_ASK_VALUES = {
    "table": "Answer with the output table only, as a JSON list of lists of strings, in one ```json code block.",
    "grid": "Answer with the output grid only, one row per line with the numbers separated by spaces, in one "
            "``` code block.",
    "json": "Answer with the output value only, as JSON, in one ```json code block.",
}
_FIX_ASK_VALUES = "Fix the function. Answer with the complete corrected `{signature}` function in one ```python code block."


def signature(task: Task) -> str:
    """``def transform(table):`` for tables; ``def <entry>(grid):`` / ``def <entry>(x):`` otherwise."""
    return f"def {task.entry}({TYPE_WORDS[task.value_type][1]}):"


def _system(task: Task) -> str:
    if task.one_table_example:
        return SYSTEM_PROMPT
    return SYSTEM_PROMPT_VALUES.format(what=TYPE_WORDS[task.value_type][0])


def _values_block(task: Task) -> str:
    parts, kind = [], task.value_type
    many = len(task.examples) > 1
    for i, ex in enumerate(task.examples, 1):
        name = f"Example {i}" if many else "Example"
        parts += [f"{name} input:\n{render_value(ex.input, kind)}", f"{name} output:\n{render_value(ex.output, kind)}"]
    parts.append(f"New input:\n{render_value(task.test_input, kind)}")
    return "\n\n".join(parts)


def _task_block(task: Task) -> str:
    if not task.one_table_example:
        return _values_block(task)
    return (
        f"Example input:\n{render_table(task.input_table)}\n\n"
        f"Example output:\n{render_table(task.output_table)}\n\n"
        f"New input:\n{render_table(task.test_table)}"
    )


def direct_messages(task: Task) -> list[dict]:
    """Ask for the new input's output table as a JSON list of lists of strings."""
    if not task.one_table_example:
        user = (f"{_task_block(task)}\n\nApply the examples' transformation to the new input. "
                f"{_DIRECT_ASK_VALUES[task.value_type]}")
        return [{"role": "system", "content": _system(task)}, {"role": "user", "content": user}]
    user = (
        f"{_task_block(task)}\n\n"
        "Apply the example's transformation to the new input. Answer with the output table "
        "only, as a JSON list of lists of strings, in one ```json code block."
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def write_messages(task: Task) -> list[dict]:
    """Ask for a ``transform(table)`` program (``<entry>(x)`` for values) in one python block."""
    rules = _WRITE_RULES if task.one_table_example else _WRITE_RULES_VALUES.format(
        signature=signature(task), python=_PYTHON_FORM[task.value_type])
    user = f"{_task_block(task)}\n\n{rules}"
    return [{"role": "system", "content": _system(task)}, {"role": "user", "content": user}]


def describe_feedback(feedback: Feedback) -> str:
    """The user-turn text of a repair prompt: what went wrong, in words a model can act on."""
    message = _cap(feedback.message, MAX_FEEDBACK_CHARS)
    if feedback.error == "parse":
        head = f"Your answer did not contain a usable `{feedback.signature}` function."
    elif feedback.error == "wrong_output":
        head = ("The function ran on the example input, but its output differs from the example output."
                if not feedback.example else
                f"The function ran on example {feedback.example}, but its output differs from that example's output.")
    elif feedback.error == "new_input_crash":
        head = ("The function reproduces the example output, but running it on the new input failed "
                f"(error: {feedback.test_error}).")
    elif feedback.example:
        head = f"Running the function on example {feedback.example}'s input failed (error: {feedback.error})."
    else:
        head = f"Running the function on the example input failed (error: {feedback.error})."
    text = f"{head}\n{message}" if message else head
    if feedback.test_error and feedback.error != "new_input_crash":
        text += f"\nOn the new input it failed too (error: {feedback.test_error})."
        if feedback.test_message:
            text += f"\n{_cap(feedback.test_message, MAX_FEEDBACK_CHARS // 2)}"
    return text


_FIX_ASK = ("Fix the function. Answer with the complete corrected `def transform(table):` "
            "function in one ```python code block.")


def _code_turn(code: str | None) -> dict:
    code = code.strip() if code else ""
    return {"role": "assistant", "content": f"```python\n{code}\n```" if code else "(no code)"}


def fix_messages(task: Task, previous_code: str, feedback: Feedback,
                 history: list[tuple[str | None, Feedback]] | None = None) -> list[dict]:
    """The write conversation, the previous code as the assistant's turn, then the feedback.

    ``history``: earlier (code, feedback) attempts, oldest first, shown before the latest one as
    alternating assistant and user turns (off by default so existing prompts and caches hold).
    """
    return fix_messages_text(task, previous_code, describe_feedback(feedback),
                             [(code, describe_feedback(fb)) for code, fb in history or []])


def fix_messages_text(task: Task, previous_code: str, feedback: str,
                      history: list[tuple[str | None, str]] | None = None) -> list[dict]:
    """``fix_messages`` from the feedback texts (``describe_feedback``'s, or as a record holds them)."""
    ask = _FIX_ASK if task.one_table_example else _FIX_ASK_VALUES.format(signature=signature(task))
    turns: list[dict] = []
    for code, text in history or []:
        turns += [_code_turn(code), {"role": "user", "content": f"{text}\n\n{ask}"}]
    return write_messages(task) + turns + [
        _code_turn(previous_code),
        {"role": "user", "content": f"{feedback}\n\n{ask}"},
    ]


# ----------------------------------------------------------------------------- feedback


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " ...[truncated]"


def _row(row) -> str:
    return _cap(json.dumps(row, ensure_ascii=False, separators=(",", ":")), MAX_ROW_CHARS)


def _shape(table: Table) -> str:
    if not table:  # a program may return [] on the example: that is feedback, not a crash
        return "0 rows"
    widths = sorted({len(r) for r in table})
    cols = str(widths[0]) if len(widths) == 1 else f"{widths[0]}-{widths[-1]}"
    return f"{len(table)} rows x {cols} cols"


def table_diff(expected: Table, produced: Table) -> str:
    """A compact account of how ``produced`` differs from ``expected``: shape, then first rows."""
    lines = [f"Expected {_shape(expected)}, got {_shape(produced)}."]
    if sorted(map(tuple, expected)) == sorted(map(tuple, produced)):
        lines.append("The rows are right but in the wrong order.")
    elif expected and produced and [list(c) for c in zip(*expected)] == produced:
        lines.append("The output is the expected table transposed.")
    lines += row_diff_lines(expected, produced, MAX_DIFF_ROWS, _row)
    return _cap("\n".join(lines), MAX_FEEDBACK_CHARS)


def feedback_from_run(expected: Table, produced: Table | None, error: str | None, message: str,
                      test_error: str | None = None, test_message: str = "") -> Feedback:
    """Feedback for a repair prompt from one run of a program on the public example (and, when
    it crashed, the run on the new input: visible, since it needs no answer).

    With a sandbox ``error`` the category and its (capped) message are kept; a program that ran
    but produced the wrong table (``error`` None or ``"wrong_output"``) gets ``wrong_output``
    and a row diff. A run whose output matches gets ``"new_input_crash"`` when the new-input run
    failed (``test_error``), else error ``"none"`` (callers normally do not ask for a repair then).
    """
    crash = {"test_error": test_error, "test_message": _cap(test_message or "", MAX_FEEDBACK_CHARS)} if test_error else {}
    if error == "wrong_output" and produced is not None:
        error = None  # a table came back: the row diff says more than a generic message
    if error:
        return Feedback(error=error, message=_cap(message or "", MAX_FEEDBACK_CHARS), produced=produced, **crash)
    if produced is None:
        return Feedback(error="bad_output", message=_cap(message or "the function returned no table", MAX_FEEDBACK_CHARS), **crash)
    if produced == expected:
        if crash:
            return Feedback(error="new_input_crash", message=crash["test_message"], produced=produced,
                            test_error=test_error)
        return Feedback(error="none", message="The output matches the example output.", produced=produced)
    return Feedback(error="wrong_output", message=table_diff(expected, produced), produced=produced, **crash)


def feedback_for_values(task: Task, example: int, produced, error: str | None, message: str,
                        test_error: str | None = None, test_message: str = "") -> Feedback:
    """``feedback_from_run`` for a task of any value (``Task.one_table_example`` false): the run on
    example ``example`` (0-based; the first that failed, or the last when all passed) against that
    example's output, the diff worded for the value type (``value_text.value_diff``)."""
    sig = {"signature": signature(task), "example": example + 1 if len(task.examples) > 1 else 0}
    crash = {"test_error": test_error, "test_message": _cap(test_message or "", MAX_FEEDBACK_CHARS)} if test_error else {}
    expected = task.examples[example].output
    if error == "wrong_output" and produced is not None:
        error = None
    if error:
        return Feedback(error=error, message=_cap(message or "", MAX_FEEDBACK_CHARS), produced=produced, **crash, **sig)
    if produced is None:
        return Feedback(error="bad_output", message=_cap(message or "the function returned no value", MAX_FEEDBACK_CHARS),
                        **crash, **sig)
    from cases import values_equal

    if values_equal(produced, expected):
        if crash:
            return Feedback(error="new_input_crash", message=crash["test_message"], produced=produced,
                            test_error=test_error, **sig)
        return Feedback(error="none", message="The output matches the example output.", produced=produced, **sig)
    diff = value_diff(expected, produced, task.value_type, MAX_DIFF_ROWS, MAX_ROW_CHARS)
    return Feedback(error="wrong_output", message=_cap(diff, MAX_FEEDBACK_CHARS), produced=produced, **crash, **sig)
