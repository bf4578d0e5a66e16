"""The chat conversations behind a trace record, rebuilt from its ``task`` and rounds.

A record stores what the model answered (``raw``) but not the prompts: they are a pure function
of the task and the earlier rounds (``tracegen.prompts``). ``round_messages`` is the ONE place
that rebuilds the prompt of a program round; the viewer (the repair feedback a round got) and
the SFT export (``controller/report/sft.py``) both call it, so a change to the repair prompt is made
here once.

Records of trace schema v1 hold a flat ``samples`` list of WRITE round dicts; v2 holds a list
of samples, each a list of rounds (its WRITE, then FIX rounds). ``program_chains`` accepts both.
"""
from __future__ import annotations

from .backends.base import Task
from .prompts import direct_messages, feedback_from_run, fix_messages, write_messages


def record_task(record: dict) -> Task:
    t = record["task"]
    return Task(record["case_id"], t["input_table"], t["output_table"], t["test_table"])


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
    if visible.get("error") == "parse":  # no program: nothing ran on the new input either
        return feedback_from_run(task.output_table, None, "parse", visible.get("message") or "")
    crashed = (test.get("error") or "crash") if not test.get("ok") else None  # visible: needs no answer
    if rnd.get("visible_pass") and not crashed:
        return None
    return feedback_from_run(task.output_table, visible.get("output"), visible.get("error"),
                             visible.get("message") or "", crashed, test.get("message") or "")


def round_messages(task: Task, chain: list[dict], i: int, repair_history: bool = False) -> list[dict]:
    """The messages the model was sent for round ``i`` of ``chain`` (WRITE at 0, else FIX).

    ``repair_history`` (``--repair-history``): the FIX prompt also shows every earlier attempt."""
    if i == 0:
        return write_messages(task)
    prev = chain[i - 1]
    history = [(r.get("code"), round_feedback(task, r)) for r in chain[: i - 1]] if repair_history else None
    return fix_messages(task, prev.get("code") or "", round_feedback(task, prev), history)


def direct_conversation(record: dict) -> list[dict]:
    """The direct prompt and the model's answer as it was written."""
    return direct_messages(record_task(record)) + [
        {"role": "assistant", "content": (record.get("direct") or {}).get("raw") or ""}]


def round_conversation(record: dict, chain: list[dict], i: int, repair_history: bool = False) -> list[dict]:
    """The prompt of round ``i`` and the model's raw answer to it."""
    return round_messages(record_task(record), chain, i, repair_history) + [
        {"role": "assistant", "content": chain[i].get("raw") or ""}]
