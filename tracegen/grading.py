"""How an attempt is judged: exact match against the hidden answer (``cases.values_equal``: tables
cell for cell as strings, any other value by exact JSON equality).

This is the only module of ``tracegen`` that reads ``Case.test_answer``; its output goes under a
record's ``hidden`` key and nowhere else.
"""
from __future__ import annotations

from cases import Case, values_equal


def exact(value, answer) -> bool | None:
    """True/False for a scored case, None when the case has no hidden answer."""
    if answer is None:
        return None
    return value is not None and values_equal(value, answer)


def hidden_block(case: Case, direct_table, round_outputs: list) -> dict:
    """Everything derived from ``TestAnswer`` for one record."""
    answer = case.test_answer
    return {
        "answer": answer,
        "direct_exact": exact(direct_table, answer),
        "rounds": [{"hidden_exact": exact(out, answer)} for out in round_outputs],
    }


def program_right(record: dict) -> bool:
    """Some round's program passed the public example and is right on the new input: a program a
    visible-state controller could commit and be right with."""
    return any(r["visible_pass"] and bool(h["hidden_exact"])
               for r, h in zip(record["rounds"], record["hidden"]["rounds"]))


def headroom_families(records) -> list[str]:
    """Families where a committable program is right and the direct answer is wrong: the cases
    where choosing the tool can pay off."""
    return sorted({r["family"] for r in records
                   if r["hidden"]["answer"] is not None and not r["hidden"]["direct_exact"] and program_right(r)})
