"""The task prompt of the LoRA policy (``--lora-prompt task``): the state's visible features
(``State.text``) preceded by the task itself, so a pretrained base can read what the features
only summarise.

What it shows, all of it visible to a controller (``controller/env/state.visible_view``): the
examples' inputs and outputs, the new input's shape (rows x cols, and its header row), the
direct answer, and for the latest revealed program round its output on the example and the
sandbox's feedback (error kind and message). Tables are cut to ``max_rows`` rows and each cell to
``max_cell`` characters; prompts longer than the policy's ``max_length`` keep their last tokens
(``lora_scoring``), so the state's features and the action cue always survive.

Records are looked up by ``State.case_id`` in a registry filled by ``use_records`` (the study
registers its records once per experiment; the split-seed loop re-registers the same cases).
"""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["PROMPTS", "use_records", "task_text", "prompt_for"]

PROMPTS = ("state", "task")
_RECORDS: dict[str, dict] = {}


def use_records(records: Iterable[dict]) -> None:
    """Make ``records`` the ones the task prompt reads (by case id)."""
    _RECORDS.clear()
    _RECORDS.update({r["case_id"]: r for r in records})


def _table(t, max_rows: int, max_cell: int) -> str:
    if not isinstance(t, list):
        return "none"
    rows = [" | ".join(str(c)[:max_cell] for c in (row if isinstance(row, list) else [row])) for row in t[:max_rows]]
    more = f"\n(+{len(t) - max_rows} rows)" if len(t) > max_rows else ""
    return "\n".join(rows) + more


def _shape(t) -> str:
    if not isinstance(t, list):
        return "none"
    return f"{len(t)}x{max((len(r) for r in t if isinstance(r, list)), default=0)}"


def task_text(view: dict, max_rows: int = 4, max_cell: int = 12) -> str:
    """The task block for a visible view (``visible_view(record, pos)``)."""
    from tracegen.records import direct_value, task_examples, task_test_input

    tab = lambda t: _table(t, max_rows, max_cell)
    test, direct, examples = task_test_input(view), direct_value(view), task_examples(view)
    lines = []
    for k, (x, y) in enumerate(examples, 1):  # one example: the lines as they were
        name = f"example {k}" if len(examples) > 1 else "example"
        lines += [f"{name} input:", tab(x), f"{name} output:", tab(y)]
    lines += [f"new input: {_shape(test)} header: " + (" | ".join(str(c)[:max_cell] for c in test[0])
                                                       if isinstance(test, list) and test and isinstance(test[0], list)
                                                       else "none"),
              f"direct answer ({_shape(direct)}):", tab(direct)]
    rounds = view.get("rounds") or []
    if rounds:
        r = rounds[-1]
        vis = r.get("visible") or {}
        lines += [f"program round {r['round']} output on the example ({_shape(vis.get('output'))}):",
                  tab(vis.get("output")),
                  f"feedback: {'pass' if r.get('visible_pass') else (vis.get('error') or 'fail')}"
                  + (f" {str(vis.get('message'))[:120]}" if vis.get("message") else "")]
    return "\n".join(lines)


def prompt_for(state, prompt: str = "state") -> str:
    """The LoRA policy's prompt for ``state``: its text, or (``task``) the task block before it."""
    if prompt == "state":
        return state.text
    from controller.env.state import visible_view

    rec = _RECORDS.get(state.case_id)
    if rec is None:
        raise KeyError(f"task prompt: no record registered for case {state.case_id!r} (use_records)")
    return task_text(visible_view(rec, state.pos)) + "\n" + state.text
