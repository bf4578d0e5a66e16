"""Failure analysis over trace records: where direct answers and programs go wrong.

This is evaluation-side analysis: it reads ``record["hidden"]`` (the hidden answer and the
per-round hidden correctness), which no policy may do. Only scored cases (``hidden.answer``
not None) are counted; unscored ones are reported as a count and otherwise skipped.

Categories, each counted per split and in total:

- direct answers: correct, did not parse, wrong shape vs the hidden answer, close miss
  (see ``is_close_miss``), far miss (right shape, more cells wrong);
- program rounds by what the visible run on the public example did (``round_category``);
- overfit programs: passed the public example but were wrong on the new input, with the
  families where that happens (an ambiguous example admits several programs);
- cut off: direct answers and program rounds that stopped at the token limit
  (``finish_reason == "length"``); a cut-off reasoning block is its own category
  (``truncated_thinking``) among direct answers and rounds;
- budget cuts: program rounds whose search the opt-in wall-clock cap stopped
  (``finish_reason == "budget"``, synth with ``--synth-time-budget``): their answer depends on load;
- repeated repairs: a FIX round whose code repeats an earlier round's code verbatim;
- hidden-only rounds: right on the new input but failed the public example (no visible
  path can commit them);
- unsolvable cases: neither the direct answer nor any round that passed the public example is
  correct, so no policy that commits via visible state can solve them (the oracle's ceiling).

With ``outcomes_by_policy`` each policy's wrong answers are split by what it committed.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from cases import shape, values_equal
from controller.env.state import SANDBOX_ERRORS, chains
from tracegen.grading import program_right
from tracegen.records import direct_value

Table = list[list[str]]

# A near miss is at most this many wrong cells, or at most this share of cells: one place.
CLOSE_MISS_MAX_CELLS = 2
CLOSE_MISS_MAX_FRACTION = 0.10

# "parse": no code could be extracted; "truncated_thinking": cut off at the token limit while
# still reasoning (no answer at all); "wrong_output": ran but differs from the example.
ROUND_CATEGORIES = ("parse", "truncated_thinking") + SANDBOX_ERRORS + ("wrong_output", "pass")
DIRECT_CATEGORIES = ("correct", "truncated_thinking", "unparsed", "wrong_shape", "close_miss", "far_miss")
TRUNCATED = "truncated_thinking"
# an attempt the backend declined (synth on a task its DSL does not answer): a category of direct
# answers and rounds alike, counted only where it occurs (a run without any keeps its counts' keys)
DECLINED = "declined"


# ----------------------------------------------------------------------------- pure helpers


def _two_d(v) -> bool:
    return isinstance(v, list) and all(isinstance(r, list) for r in v)


def same_shape(a: Table, b: Table) -> bool:
    """Same number of rows and the same length for every row."""
    return len(a) == len(b) and all(len(x) == len(y) for x, y in zip(a, b))


def cell_diff(a: Table, b: Table) -> int | None:
    """Number of differing cells between two same-shape tables; None when shapes differ."""
    if not same_shape(a, b):
        return None
    return sum(x != y for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def is_close_miss(table: Table, answer: Table) -> bool:
    """Right shape, not exact, and at most 2 cells or at most 10% of the cells wrong."""
    wrong = cell_diff(table, answer)
    if not wrong:  # None (shape differs) or 0 (exact)
        return False
    cells = sum(len(r) for r in answer)
    return wrong <= CLOSE_MISS_MAX_CELLS or wrong <= CLOSE_MISS_MAX_FRACTION * cells


def direct_category(record: Mapping) -> str:
    """One of DIRECT_CATEGORIES (or DECLINED) for the record's direct answer (record must be scored)."""
    table = direct_value(record)
    answer = record["hidden"]["answer"]
    if table is None:
        parse = (record.get("direct") or {}).get("parse") or {}
        return parse.get("status") if parse.get("status") in (TRUNCATED, DECLINED) else "unparsed"
    if values_equal(table, answer):
        return "correct"
    if not (_two_d(table) and _two_d(answer)):  # a grid's rows, a list, a string: no cells to count
        return "wrong_shape" if shape(table) != shape(answer) else "far_miss"
    if not same_shape(table, answer):
        return "wrong_shape"
    return "close_miss" if is_close_miss(table, answer) else "far_miss"


def round_category(rnd: Mapping) -> str:
    """One of ROUND_CATEGORIES (or DECLINED) for what a program round did on the public example."""
    if not rnd.get("code"):  # the parser found no program in the raw text
        status = (rnd.get("parse") or {}).get("status")
        return status if status in (TRUNCATED, DECLINED) else "parse"
    if rnd.get("visible_pass"):
        return "pass"
    visible = rnd.get("visible") or {}
    error = visible.get("error")
    if error in SANDBOX_ERRORS:
        return error
    # Ran cleanly (or with an unknown error label) but did not reproduce the example.
    return "wrong_output" if visible.get("ok", True) else "crash"


def _hidden_rounds(record: Mapping) -> list[bool | None]:
    hidden = record["hidden"].get("rounds") or []
    rounds = record.get("rounds") or []
    return [(hidden[i] or {}).get("hidden_exact") if i < len(hidden) else None
            for i in range(len(rounds))]


def _norm_code(code: str) -> str:
    # Whitespace-only edits are still the same program for the purpose of a wasted repair.
    return "\n".join(line.rstrip() for line in code.strip().splitlines())


def repeated_repairs(record: Mapping) -> int:
    """FIX rounds whose code equals (up to trailing whitespace) the code of an earlier round."""
    seen: set[str] = set()
    repeats = 0
    for rnd in record.get("rounds") or []:
        code = rnd.get("code")
        if not code:
            continue
        key = _norm_code(code)
        if rnd.get("kind") == "fix" and key in seen:
            repeats += 1
        seen.add(key)
    return repeats


def visibly_solvable(record: Mapping) -> bool:
    """Some visible path is right: the direct answer, or a round that passed the example."""
    return bool(record["hidden"].get("direct_exact")) or program_right(record)


# ----------------------------------------------------------------------------- counting


def _policy_failures(records: Sequence[Mapping], outcomes: Sequence[Mapping]) -> dict:
    by_case = {o["case_id"]: o for o in outcomes}
    counts = {"n": 0, "wrong": 0, "wrong_direct_commit": 0, "wrong_program_commit": 0,
              "wrong_but_solvable": 0}
    for rec in records:
        o = by_case.get(rec["case_id"])
        if o is None or o.get("correct") is None:
            continue
        counts["n"] += 1
        if o["correct"]:
            continue
        counts["wrong"] += 1
        key = "wrong_program_commit" if o.get("source") == "program" else "wrong_direct_commit"
        counts[key] += 1
        counts["wrong_but_solvable"] += visibly_solvable(rec)
    return counts


def _count(records: Sequence[Mapping], outcomes_by_policy: Mapping | None) -> dict:
    """All categories over a list of scored records."""
    direct = dict.fromkeys(DIRECT_CATEGORIES, 0)
    rounds = dict.fromkeys(ROUND_CATEGORIES, 0)
    out = {"n": len(records), "n_rounds": 0, "overfit_rounds": 0, "overfit_cases": 0,
           "overfit_families": set(), "fix_rounds": 0, "repeated_repairs": 0,
           "hidden_only_rounds": 0, "unsolvable_cases": 0, "unsolvable_families": set(),
           "direct_cut_off": 0, "cut_off_rounds": 0, "budget_cut_rounds": 0}
    for rec in records:
        cat = direct_category(rec)
        direct[cat] = direct.get(cat, 0) + 1
        out["direct_cut_off"] += (rec.get("direct") or {}).get("finish_reason") == "length"
        overfit_here = 0
        for rnd, hidden_exact in zip(rec.get("rounds") or [], _hidden_rounds(rec)):
            out["n_rounds"] += 1
            out["fix_rounds"] += rnd.get("kind") == "fix"
            out["cut_off_rounds"] += rnd.get("finish_reason") == "length"  # hit --max-new-tokens
            out["budget_cut_rounds"] += rnd.get("finish_reason") == "budget"  # hit --synth-time-budget
            cat = round_category(rnd)
            rounds[cat] = rounds.get(cat, 0) + 1
            if cat == "pass" and hidden_exact is False:
                overfit_here += 1
            if cat != "pass" and hidden_exact:
                out["hidden_only_rounds"] += 1
        out["overfit_rounds"] += overfit_here
        if overfit_here:
            out["overfit_cases"] += 1
            out["overfit_families"].add(rec["family"])
        out["repeated_repairs"] += repeated_repairs(rec)
        if not visibly_solvable(rec):
            out["unsolvable_cases"] += 1
            out["unsolvable_families"].add(rec["family"])
    out["overfit_families"] = sorted(out["overfit_families"])
    out["unsolvable_families"] = sorted(out["unsolvable_families"])
    out["direct"] = direct
    out["round_categories"] = rounds
    if outcomes_by_policy:
        out["policies"] = {p: _policy_failures(records, o) for p, o in outcomes_by_policy.items()}
    return out


def failure_breakdown(
    records: Iterable[Mapping], outcomes_by_policy: Mapping[str, Sequence[Mapping]] | None = None
) -> dict:
    """Failure counts per split and in total over the scored records.

    Returns ``{"close_miss_rule": {...}, "unscored": {split: k}, "splits": {split: counts},
    "total": counts}``; ``counts`` holds ``n``, ``direct`` (DIRECT_CATEGORIES),
    ``n_rounds``, ``round_categories`` (ROUND_CATEGORIES), ``overfit_rounds``,
    ``overfit_cases``, ``overfit_families``, ``fix_rounds``, ``repeated_repairs``,
    ``hidden_only_rounds``, ``unsolvable_cases``, ``unsolvable_families``, ``direct_cut_off``,
    ``cut_off_rounds``, ``budget_cut_rounds`` and, with
    outcomes, ``policies[policy]`` = ``n, wrong, wrong_direct_commit,
    wrong_program_commit, wrong_but_solvable``.
    """
    records = list(records)
    unscored: dict[str, int] = {}
    by_split: dict[str, list[Mapping]] = {}
    for rec in records:
        split = rec.get("split", "all")
        if (rec.get("hidden") or {}).get("answer") is None:
            unscored[split] = unscored.get(split, 0) + 1
            continue
        by_split.setdefault(split, []).append(rec)

    def outcomes_for(split: str | None) -> dict | None:
        if not outcomes_by_policy:
            return None
        return {p: [o for o in os_ if split is None or o.get("split") == split]
                for p, os_ in outcomes_by_policy.items()}

    scored = [r for recs in by_split.values() for r in recs]
    return {
        "close_miss_rule": {"max_cells": CLOSE_MISS_MAX_CELLS,
                            "max_fraction": CLOSE_MISS_MAX_FRACTION},
        "unscored": dict(sorted(unscored.items())),
        "splits": {s: _count(recs, outcomes_for(s)) for s, recs in sorted(by_split.items())},
        "total": _count(scored, outcomes_for(None)),
    }


def repair_pass_rates(records: Sequence[Mapping]) -> list[dict]:
    """Per repair round r (FIX r of a chain, every sample's chain): how many chains reached it,
    how many of those repairs pass the public example, and how many are right on the hidden answer
    (scored cases only). A chain reaches FIX r when its program still failed after r - 1 repairs."""
    rows: dict[int, dict] = {}
    for rec in records:
        if rec["hidden"]["answer"] is None:
            continue
        for rounds, hidden in chains(rec):
            for k, (rnd, hid) in enumerate(zip(rounds, hidden)):
                if k == 0:
                    continue
                row = rows.setdefault(k, {"repair": k, "reached": 0, "passed": 0, "right": 0,
                                                "passed_right": 0})
                row["reached"] += 1
                row["passed"] += int(bool(rnd["visible_pass"]))
                row["right"] += int(bool(hid.get("hidden_exact")))
                row["passed_right"] += int(bool(rnd["visible_pass"] and hid.get("hidden_exact")))
    for row in rows.values():
        row["pass_rate"] = round(row["passed"] / row["reached"], 4) if row["reached"] else None
    return [rows[k] for k in sorted(rows)]
