"""The chat conversations behind a trace record, rebuilt from its ``task`` and rounds.

A record stores what the model answered (``raw``) and, since schema v4, each repair round's
feedback text (``feedback``), but not the prompts: they are a pure function of the task and the
earlier rounds (``tracegen.prompts``). ``round_messages`` is the ONE place
that rebuilds the prompt of a program round; the viewer (the repair feedback a round got) and
the SFT export (``controller/report/sft.py``) both call it, so a change to the repair prompt is made
here once.

Records of trace schema v1 hold a flat ``samples`` list of WRITE round dicts; v2 holds a list
of samples, each a list of rounds (its WRITE, then FIX rounds). ``program_chains`` accepts both.

Since prompts are rebuilt, not stored, every record names the prompt version that made it:
``prompt_digest()`` (the record's ``prompts`` key and ``trace_config.prompts``), and
``prompt_version_note(records)`` says, in one line, when today's templates are not the ones a
run's traces were made with (the viewer and the SFT export rebuild prompts from today's).
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter

from cases import Example

from . import prompts as _prompts
from .backends.base import Feedback, Task
from .prompts import (direct_messages, feedback_for_values, feedback_from_run, fix_messages, fix_messages_text,
                      write_messages)


def record_task(record: dict) -> Task:
    """The task of a record (version 4, or the one-table task of a version 2 or 3 record)."""
    t = record["task"]
    if "input_table" in t:
        return Task.from_tables(record["case_id"], t["input_table"], t["output_table"], t["test_table"])
    return Task(record["case_id"], tuple(Example(e["input"], e["output"]) for e in t["examples"]), t["test_input"],
                t.get("value_type", "table"), t.get("entry", "transform"))


def _as_chain(sample) -> list[dict]:
    """A sample is a list of round dicts (v2) or one round dict (v1's flat list)."""
    if isinstance(sample, dict):
        return [sample]
    return [r for r in (sample or []) if isinstance(r, dict)]


def program_chains(record: dict) -> list[tuple[list[dict], list[bool | None]]]:
    """Every sample's chain of rounds with its hidden grades: sample 0 is ``rounds``."""
    hidden = record.get("hidden") or {}
    chains = [(list(record.get("rounds") or []), hidden.get("rounds") or [])]
    hidden_samples = hidden.get("samples") or []
    for j, sample in enumerate(record.get("samples") or []):
        chains.append((_as_chain(sample), _as_chain(hidden_samples[j]) if j < len(hidden_samples) else []))
    out = []
    for rounds, grades in chains:
        exact = [(grades[i] or {}).get("hidden_exact") if i < len(grades) else None for i in range(len(rounds))]
        out.append((rounds, exact))
    return out


def round_feedback(task: Task, rnd: dict):
    """The repair feedback a round produced (what the next FIX prompt shows); None when it passed
    the public example and ran on the new input. The rollout builds its feedback here too."""
    visible, test = rnd.get("visible") or {}, rnd.get("test") or {}
    if not task.one_table_example:
        return _values_feedback(task, rnd, visible, test)
    if visible.get("error") == "parse":  # no program: nothing ran on the new input either
        return feedback_from_run(task.output_table, None, "parse", visible.get("message") or "")
    crashed = (test.get("error") or "crash") if not test.get("ok") else None  # visible: needs no answer
    if rnd.get("visible_pass") and not crashed:
        return None
    return feedback_from_run(task.output_table, visible.get("output"), visible.get("error"),
                             visible.get("message") or "", crashed, test.get("message") or "")


def _values_feedback(task: Task, rnd: dict, visible: dict, test: dict):
    """``round_feedback`` for a task of any value: about the first example the program failed
    (``visible_runs``; with one example, ``visible`` is its run)."""
    if visible.get("error") == "parse":
        return feedback_for_values(task, 0, None, "parse", visible.get("message") or "")
    crashed = (test.get("error") or "crash") if not test.get("ok") else None
    if rnd.get("visible_pass") and not crashed:
        return None
    runs = rnd.get("visible_runs") or [visible]
    k = next((i for i, r in enumerate(runs) if r.get("error")), len(runs) - 1)
    run = runs[k]
    message = run.get("message", visible.get("message") if len(runs) == 1 else "") or ""
    return feedback_for_values(task, k, run.get("output"), run.get("error"), message, crashed,
                               test.get("message") or "")


def round_messages(task: Task, chain: list[dict], i: int, repair_history: bool = False,
                   recorded: bool = False) -> list[dict]:
    """The messages the model was sent for round ``i`` of ``chain`` (WRITE at 0, else FIX).

    ``repair_history`` (``--repair-history``): the FIX prompt also shows every earlier attempt.
    ``recorded``: the feedback texts the rounds recorded (``feedback``, schema v4: what the model
    was shown, whatever made it) where every one the prompt shows is there; else they are rebuilt
    from the rounds' runs with today's templates."""
    if i == 0:
        return write_messages(task)
    prev = chain[i - 1]
    shown = range(1, i + 1) if repair_history else (i,)
    if recorded and all(isinstance(chain[k].get("feedback"), str) for k in shown):
        history = [(chain[k - 1].get("code"), chain[k]["feedback"]) for k in range(1, i)] if repair_history else None
        return fix_messages_text(task, prev.get("code") or "", chain[i]["feedback"], history)
    history = [(r.get("code"), round_feedback(task, r)) for r in chain[: i - 1]] if repair_history else None
    return fix_messages(task, prev.get("code") or "", round_feedback(task, prev), history)


def direct_conversation(record: dict) -> list[dict]:
    """The direct prompt and the model's answer as it was written."""
    return direct_messages(record_task(record)) + [
        {"role": "assistant", "content": (record.get("direct") or {}).get("raw") or ""}]


def round_conversation(record: dict, chain: list[dict], i: int, repair_history: bool = False) -> list[dict]:
    """The prompt of round ``i`` (its recorded feedback where it has one) and the model's raw answer."""
    return round_messages(record_task(record), chain, i, repair_history, recorded=True) + [
        {"role": "assistant", "content": chain[i].get("raw") or ""}]


# ----------------------------------------------------------------------------- the prompt version

PROMPT_DIGEST_CHARS = 12  # hex digits of sha256 kept: short enough to read, ample to tell versions apart
_TEMPLATE_NAMES = ("SYSTEM_PROMPT", "_WRITE_RULES", "_FIX_ASK", "MAX_FEEDBACK_CHARS", "MAX_DIFF_ROWS", "MAX_ROW_CHARS")


def _probe_rounds() -> list[dict]:
    """Round dicts that drive every branch of the feedback a FIX prompt shows (``round_feedback``,
    ``feedback_from_run``, ``describe_feedback``, ``table_diff``): parse failure, sandbox error,
    wrong rows, reordered and transposed tables, missing and extra rows, more differing rows than
    shown, an over-long row, an empty table, no table, a new-input crash after a pass or after a
    failure (a round that passed and ran on the new input gets no repair, so none is here)."""
    ok = {"ok": True, "error": None, "message": ""}
    crash = {"ok": False, "error": "exception", "message": "IndexError: list index out of range"}
    many = [[str(i), "y" * (i % 3)] for i in range(_prompts.MAX_DIFF_ROWS + 3)]

    def rnd(code, visible, test=ok, passed=False):
        return {"code": code, "visible": visible, "test": test, "visible_pass": passed}

    def out(table, error=None, message=""):
        return {"ok": error is None, "error": error, "message": message, "output": table}

    return [
        rnd(None, {"ok": False, "error": "parse", "message": "no ```python block"}),
        rnd("def transform(table):\n    return table[9]", out(None, "exception", "IndexError: x" * 200), crash),
        rnd("def transform(table):\n    return table", out([["b", "a"], ["c", "d"]])),
        rnd("def transform(table):\n    return table[::-1]", out([["c", "d"], ["a", "b"]])),
        rnd("def transform(table):\n    return list(zip(*table))", out([["a", "c"], ["b", "d"]])),
        rnd("def transform(table):\n    return table[:1]", out([["a", "b"]])),
        rnd("def transform(table):\n    return table * 2", out([["a", "b"], ["c", "d"], ["e", "f"]])),
        rnd("def transform(table):\n    return many", out(many)),
        rnd("def transform(table):\n    return long", out([["z" * (2 * _prompts.MAX_ROW_CHARS)]])),
        rnd("def transform(table):\n    return []", out([])),
        rnd("def transform(table):\n    return None", out(None, "bad_output", "")),
        rnd("def transform(table):\n    return 1", out(None, None, "")),
        rnd("def transform(table):\n    return table", out([["a", "b"], ["c", "d"]]), crash, passed=True),
        rnd("def transform(table):\n    return table", out([["a", "b"]], "wrong_output", "wrong"), crash),
    ]


def _probe_conversations() -> list:
    """Every prompt the rollout can build, for a small fixed task: direct, WRITE, and the FIX
    prompt after each probe round, with and without ``--repair-history``."""
    task = Task.from_tables("probe", [["1", "x"], ["2", "y"]], [["a", "b"], ["c", "d"]], [["3", "z"]])
    chain = _probe_rounds()  # each one gets feedback: the rollout repairs only such rounds
    out: list = [direct_messages(task), write_messages(task), round_messages(task, chain, 0)]
    for i in range(1, len(chain) + 1):
        shown = chain[:i] + [{}]
        out.append(round_messages(task, shown, i))
        out.append(round_messages(task, shown, i, repair_history=True))
    out.append(_prompts.describe_feedback(Feedback("timeout", "took too long", test_error="memory",
                                                   test_message="over the limit")))
    out.append(_prompts.table_diff([["a"]], [["a"], ["b"]]))
    return out


_VALUE_TEMPLATE_NAMES = ("SYSTEM_PROMPT_VALUES", "_WRITE_RULES_VALUES", "_PYTHON_FORM", "_DIRECT_ASK_VALUES",
                         "_FIX_ASK_VALUES")


def _probe_value_conversations() -> list:
    """The value prompts (``Task.one_table_example`` false) for fixed probe tasks: a grid task with
    two examples, a string task, a table task with two examples; each with the feedback of every
    probe round."""
    from cases import Example

    tasks = [Task("probe_grid", (Example([[0, 7, 0]], [[7, 0, 0]]), Example([[0, 0, 5, 5]], [[0, 5, 5, 0]])),
                  [[0, 0, 3]], "grid"),
             Task("probe_str", (Example("ab c", "AB C"),), "x y", "json", "solve"),
             Task("probe_tables", (Example([["a"]], [["A"]]), Example([["b", "c"]], [["B"]])), [["d"]])]
    out: list = []
    for task in tasks:
        out += [direct_messages(task), write_messages(task)]
        many = len(task.examples) > 1
        for produced in ([[7, 0]], [[7, 0, 0], [1]], "AB", None):
            run = {"ok": produced is not None, "error": None if produced is not None else "exception",
                   "message": "" if produced is not None else "ValueError: x", "output": produced}
            rnd = {"code": "def f(x):\n    return x", "visible": run, "test": {"ok": True}, "visible_pass": False,
                   **({"visible_runs": [dict(run, ok=True, error=None, output=task.examples[0].output), run]}
                      if many else {})}
            out.append(round_messages(task, [rnd, {}], 1))
        out.append(round_messages(task, [{"code": None, "visible": {"error": "parse", "message": "no code"}}, {}], 1))
    return out


def prompt_digest(values: bool = False) -> str:
    """The version of the prompt templates: the first ``PROMPT_DIGEST_CHARS`` hex digits of the
    sha256 of the template texts (system prompt, WRITE rules with the sandbox's allowed modules,
    the FIX request, the feedback caps) and of every prompt the rollout builds for a fixed probe
    task (``_probe_conversations``: each wording of the direct, WRITE and FIX prompts and of the
    repair feedback). It changes when any text that reaches a prompt changes, and is the same in
    every process (JSON with sorted keys; no salted hash).

    ``values``: the version of the prompts of tasks that are not one example of tables
    (``Task.one_table_example``): the table templates and probes with the value templates and
    probes (``_probe_value_conversations``). A record names the version its own prompts came from,
    so a Foofah record's is the table templates' alone."""
    texts = {name: getattr(_prompts, name) for name in _TEMPLATE_NAMES}
    blob = {"templates": texts, "probes": _probe_conversations()}
    if values:
        blob["value_templates"] = {name: getattr(_prompts, name) for name in _VALUE_TEMPLATE_NAMES}
        blob["value_probes"] = _probe_value_conversations()
    text = json.dumps(blob, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:PROMPT_DIGEST_CHARS]


def prompt_digest_of(task: Task, digests: dict[bool, str] | None = None) -> str:
    """The digest of the templates ``task``'s prompts come from (``digests``: both, computed once)."""
    values = not task.one_table_example
    return digests[values] if digests is not None else prompt_digest(values)


def todays_digest(records) -> str:
    """Today's version of the templates ``records`` were made with: the value templates' when any
    record names theirs (a run of tasks that are not one table example), else the table ones'."""
    values = prompt_digest(values=True)
    return values if any(r.get("prompts") == values for r in records) else prompt_digest()


def prompt_version_note(records, today: str | None = None) -> str | None:
    """One line when the prompts of ``records`` (their ``prompts`` key) are not today's
    (``prompt_digest()``), None when every record names today's: the viewer and the SFT export
    rebuild prompts from today's templates, which may then not be the prompts the model saw."""
    today = today or prompt_digest()
    # a record names the version of its own templates: the table ones' or the value ones'
    current = {today, prompt_digest(), prompt_digest(values=True)}
    # imported records (``source``) answered prompts made elsewhere: nothing here was rebuilt for them
    seen = Counter(r.get("prompts") for r in records if "source" not in r)
    if not seen or set(seen) <= current:
        return None
    rebuilt = f"today's prompt templates are {today}: rebuilt prompts may not be the ones the model saw"
    if set(seen) == {None}:
        return f"prompt version unknown (the traces name none: made before prompt versions were recorded); {rebuilt}"
    parts = [f"{d} ({n} record{'s' * (n != 1)})" if d else f"unknown ({n} record{'s' * (n != 1)})"
             for d, n in sorted(seen.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))]
    return f"the traces were made with prompt version {', '.join(parts)}; {rebuilt}"
