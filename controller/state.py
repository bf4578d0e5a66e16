"""Visible state: what a deployed controller may see at each decision point.

The state builder is leak-free by construction. ``visible_view`` drops ``hidden`` and every round
not yet revealed by the actions taken so far, and ``visible_state`` reads nothing but that view:
no hidden answer (not even its shape), no later rounds, no program output before WRITE.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

ACTIONS = ("DIRECT", "WRITE", "FIX", "PROGRAM")
ERRORS = ("parse", "syntax", "forbidden", "no_transform", "timeout", "memory", "exception",
          "bad_output", "crash", "wrong_output")


@dataclass(frozen=True)
class State:
    case_id: str
    revealed: int  # program rounds revealed so far (0 = start)
    valid_actions: tuple[str, ...]
    features: dict[str, float]
    text: str  # the same state rendered for a language-model policy


# What a controller may read of a record; everything else (``hidden``, later rounds, extra program
# samples, totals over work not yet done) stays out. A whitelist, so a new field is hidden by default.
VISIBLE_KEYS = ("case_id", "family", "split", "backend", "model", "max_repairs", "task", "direct")


def visible_view(record: dict, revealed: int) -> dict:
    """The record as a controller may see it after ``revealed`` program rounds."""
    view = {k: record[k] for k in VISIBLE_KEYS}
    view["rounds"] = record["rounds"][:revealed]
    return json.loads(json.dumps(view))  # a copy: a policy cannot reach back into the record


def valid_actions(view: dict) -> tuple[str, ...]:
    """Valid actions from the state table in DESIGN.md, read off a visible view."""
    rounds = view["rounds"]
    if not rounds:
        return ("DIRECT", "WRITE")
    if rounds[-1]["visible_pass"]:
        return ("DIRECT", "PROGRAM")
    if len(rounds) - 1 < view["max_repairs"]:
        return ("DIRECT", "FIX")
    return ("DIRECT",)


def _shape(t) -> tuple[int, int]:
    if not t:
        return 0, 0
    return len(t), max((len(r) for r in t), default=0)


def _agreement(a, b) -> float:
    """Share of cells equal at the same position (0 when either is missing)."""
    if not a or not b:
        return 0.0
    total = max(len(a), len(b)) * max(max(len(r) for r in a), max(len(r) for r in b), 1)
    same = sum(1 for ra, rb in zip(a, b) for x, y in zip(ra, rb) if x == y)
    return same / total if total else 0.0


def _coverage(table, source) -> float:
    """Share of a table's cells that appear verbatim in the source table (copy-like answers)."""
    cells = [c for r in (table or []) for c in r]
    if not cells:
        return 0.0
    pool = {c for r in source for c in r}
    return sum(c in pool for c in cells) / len(cells)


def _features(view: dict) -> dict[str, float]:
    task = view["task"]
    ex_in, ex_out, test_in = task["input_table"], task["output_table"], task["test_table"]
    (eir, eic), (eor, eoc), (tir, _) = _shape(ex_in), _shape(ex_out), _shape(test_in)
    direct = view["direct"]["table"]
    dr, dc = _shape(direct)
    # the row count the example's in->out ratio predicts for the new input (visible arithmetic)
    want_rows = tir * eor / eir if eir else 0.0
    f = {
        "direct_parsed": float(direct is not None),
        "direct_repaired": float(view["direct"]["parse"]["status"] == "repaired"),
        "direct_cut_off": float(view["direct"].get("finish_reason") == "length"),  # hit the token limit
        "direct_rows_vs_ratio": (dr - want_rows) / max(want_rows, 1.0),
        "direct_cols_match_example": float(dc == eoc),
        "direct_copy_coverage": _coverage(direct, test_in),
        "example_rows_ratio": eor / eir if eir else 0.0,
        "example_cols_ratio": eoc / eic if eic else 0.0,
        "test_rows_vs_example": tir / eir if eir else 0.0,
        "revealed": float(len(view["rounds"])),
        "repairs_left": float(view["max_repairs"] - max(len(view["rounds"]) - 1, 0)),
    }
    rounds = view["rounds"]
    if rounds:
        last = rounds[-1]
        out = last["test_output"]
        orr, oc = _shape(out)
        f.update({
            "last_pass": float(last["visible_pass"]),
            "last_parsed": float(last["code"] is not None),
            "last_cut_off": float(last.get("finish_reason") == "length"),
            "test_run_ok": float(last["test"]["ok"]),
            "prog_rows_vs_ratio": (orr - want_rows) / max(want_rows, 1.0) if out is not None else -1.0,
            "prog_cols_match_example": float(out is not None and oc == eoc),
            "prog_equals_direct": float(out is not None and out == direct),
            "prog_direct_agreement": _agreement(out, direct),
            "prog_copy_coverage": _coverage(out, test_in),
            "code_lines": float(len((last["code"] or "").splitlines())),
            "repeated_code": float(any(r["code"] == last["code"] for r in rounds[:-1])),
        })
        for e in ERRORS:
            f[f"err_{e}"] = float(last["visible"]["error"] == e)
    return f


FEATURE_NAMES: tuple[str, ...] = tuple(
    ["direct_parsed", "direct_repaired", "direct_rows_vs_ratio", "direct_cols_match_example",
     "direct_copy_coverage", "example_rows_ratio", "example_cols_ratio", "test_rows_vs_example",
     "revealed", "repairs_left", "last_pass", "last_parsed", "test_run_ok", "prog_rows_vs_ratio",
     "prog_cols_match_example", "prog_equals_direct", "prog_direct_agreement", "prog_copy_coverage",
     "code_lines", "repeated_code", "direct_cut_off", "last_cut_off"] + [f"err_{e}" for e in ERRORS]
)


def render(view: dict, features: dict[str, float], valid: tuple[str, ...]) -> str:
    """A compact text rendering of the state for a language-model controller."""
    rounds = view["rounds"]
    lines = [f"direct: {'parsed' if features['direct_parsed'] else 'unparsed'}"
             f" cols_match={int(features['direct_cols_match_example'])}"
             f" rows_off={features['direct_rows_vs_ratio']:+.1f} copy={features['direct_copy_coverage']:.1f}"]
    for r in rounds:
        status = "pass" if r["visible_pass"] else (r["visible"]["error"] or "fail")
        cut = " cut_off" if r.get("finish_reason") == "length" else ""
        lines.append(f"round {r['round']} {r['kind']}: {status}{cut}")
    if rounds:
        lines.append(f"program: agrees_direct={features['prog_direct_agreement']:.1f}"
                     f" same={int(features['prog_equals_direct'])}"
                     f" cols_match={int(features['prog_cols_match_example'])}"
                     f" rows_off={features['prog_rows_vs_ratio']:+.1f} repeated={int(features['repeated_code'])}")
    lines.append(f"repairs_left: {int(features['repairs_left'])}")
    lines.append("valid: " + " ".join(valid))
    return "\n".join(lines)


def visible_state(record: dict, revealed: int) -> State:
    """The state after ``revealed`` program rounds, built from the visible view alone."""
    view = visible_view(record, revealed)
    valid = valid_actions(view)
    feats = _features(view)
    full = {name: float(feats.get(name, 0.0)) for name in FEATURE_NAMES}
    return State(record["case_id"], revealed, valid, full, render(view, feats, valid))
