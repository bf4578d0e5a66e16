"""Failure breakdown on hand-built trace records where every count is known."""
import pytest

from controller.study.failures import (
    ROUND_CATEGORIES,
    SANDBOX_ERRORS,
    cell_diff,
    failure_breakdown,
    is_close_miss,
    round_category,
)

ANS = [["a", "b"]]
GRID = [["x"] * 4 for _ in range(3)]  # 12 cells


def rnd(kind, code, error=None, passed=False, ok=None):
    ok = (error is None) if ok is None else ok
    return {"round": 0, "kind": kind, "raw": "", "code": code,
            "parse": {"status": "ok" if code else "no_code", "detail": ""},
            "visible": {"ok": ok, "error": error, "message": "", "wall_ms": 1.0, "output": None},
            "visible_pass": passed, "test": {"ok": True, "error": None, "message": "",
                                             "wall_ms": 1.0}, "test_output": None}


def rec(case_id, family, split, direct, answer, rounds=(), hidden=()):
    return {"case_id": case_id, "family": family, "split": split, "backend": "synth",
            "model": "m", "direct": {"raw": "", "table": direct,
                                     "parse": {"status": "ok", "detail": ""}},
            "rounds": list(rounds),
            "hidden": {"answer": answer,
                       "direct_exact": None if answer is None else direct == answer,
                       "rounds": [{"hidden_exact": h} for h in hidden]}}


def records():
    close = [row[:] for row in GRID]
    close[0][0] = "y"
    return [
        rec("A", "fa", "test", ANS, ANS),
        rec("B", "fb", "test", None, ANS,
            [rnd("write", None), rnd("fix", "x(", "syntax"), rnd("fix", "x(\n", "syntax")],
            [False, False, False]),
        rec("C", "amb", "test", [["a"]], ANS, [rnd("write", "c", passed=True)], [False]),
        rec("D", "fd", "test", close, GRID,
            [rnd("write", "d"), rnd("fix", "d2", "timeout")], [True, False]),
        rec("E", "fe", "test", [["p", "q"], ["r", "s"]], [["1", "2"], ["3", "4"]],
            [rnd("write", "e", passed=True)], [True]),
        rec("F", "amb2", "dev", ANS, ANS,
            [rnd("write", "f", "exception"), rnd("fix", "f2", passed=True)], [False, False]),
        rec("G", "fg", "dev", ANS, None, [rnd("write", "g")], [None]),
    ]


def test_cell_diff_and_close_miss_rule():
    assert cell_diff([["a", "b"]], [["a", "c"]]) == 1
    assert cell_diff([["a"]], [["a", "b"]]) is None
    big = [[str(i) for i in range(10)] for _ in range(5)]  # 50 cells: 10% is 5
    five = [r[:] for r in big]
    for i in range(5):
        five[i][0] = "z"
    six = [r[:] for r in five]
    six[0][1] = "z"
    assert is_close_miss(five, big) and not is_close_miss(six, big)
    assert is_close_miss([["z", "z", "c", "d"]], [["a", "b", "c", "d"]])  # 2 cells
    assert not is_close_miss(big, big) and not is_close_miss([["a"]], big)


def test_round_category_covers_every_error():
    assert round_category(rnd("write", None)) == "parse"
    assert round_category(rnd("write", "c", passed=True)) == "pass"
    assert round_category(rnd("write", "c")) == "wrong_output"
    for err in SANDBOX_ERRORS:
        assert round_category(rnd("write", "c", err)) == err
    assert set(ROUND_CATEGORIES) == {"parse", "truncated_thinking", "wrong_output", "pass", *SANDBOX_ERRORS}


def test_breakdown_counts_test_split():
    f = failure_breakdown(records())
    assert f["unscored"] == {"dev": 1}
    t = f["splits"]["test"]
    assert t["n"] == 5
    assert t["direct"] == {"correct": 1, "unparsed": 1, "wrong_shape": 1, "close_miss": 1,
                           "far_miss": 1, "truncated_thinking": 0}
    assert t["n_rounds"] == 7
    expected = dict.fromkeys(ROUND_CATEGORIES, 0) | {
        "parse": 1, "syntax": 2, "pass": 2, "wrong_output": 1, "timeout": 1}
    assert t["round_categories"] == expected
    assert (t["overfit_rounds"], t["overfit_cases"], t["overfit_families"]) == (1, 1, ["amb"])
    assert t["fix_rounds"] == 3 and t["repeated_repairs"] == 1
    assert t["hidden_only_rounds"] == 1
    assert t["unsolvable_cases"] == 3 and t["unsolvable_families"] == ["amb", "fb", "fd"]
    assert "policies" not in t


def test_breakdown_dev_and_total():
    f = failure_breakdown(records())
    d = f["splits"]["dev"]
    assert d["n"] == 1 and d["direct"]["correct"] == 1
    assert d["round_categories"]["exception"] == 1 and d["round_categories"]["pass"] == 1
    assert d["overfit_families"] == ["amb2"] and d["unsolvable_cases"] == 0
    tot = f["total"]
    assert tot["n"] == 6 and tot["n_rounds"] == 9
    assert tot["overfit_families"] == ["amb", "amb2"] and tot["overfit_cases"] == 2
    assert tot["direct"]["correct"] == 2 and tot["unsolvable_cases"] == 3
    assert f["close_miss_rule"] == {"max_cells": 2, "max_fraction": pytest.approx(0.1)}


def test_breakdown_per_policy():
    def o(case, correct, source, split="test"):
        return {"policy": "p", "split": split, "case_id": case, "correct": correct,
                "source": source}
    outs = {"p": [o("A", False, "program"), o("B", False, "direct"), o("C", False, "program"),
                  o("D", False, "direct"), o("E", True, "program"), o("F", True, "direct", "dev"),
                  o("G", None, "direct", "dev")]}
    f = failure_breakdown(records(), outs)
    assert f["splits"]["test"]["policies"]["p"] == {
        "n": 5, "wrong": 4, "wrong_direct_commit": 2, "wrong_program_commit": 2,
        "wrong_but_solvable": 1}
    assert f["splits"]["dev"]["policies"]["p"]["n"] == 1
    assert f["total"]["policies"]["p"]["n"] == 6


def test_cut_off_thinking_and_token_limit_are_counted():
    """A completion cut off while reasoning is its own category, never 'parse' or an answer, and
    every completion that hit the token limit is counted."""
    cut = rnd("write", None)
    cut["parse"] = {"status": "truncated_thinking", "detail": "cut off inside <think> block"}
    cut["finish_reason"] = "length"
    assert round_category(cut) == "truncated_thinking"
    long_code = rnd("fix", "x(", "syntax")
    long_code["finish_reason"] = "length"
    r = rec("T", "ft", "test", None, ANS, [cut, long_code], [False, False])
    r["direct"]["parse"] = {"status": "truncated_thinking", "detail": ""}
    r["direct"]["finish_reason"] = "length"
    t = failure_breakdown([r])["total"]
    assert t["direct"]["truncated_thinking"] == 1 and t["direct"]["unparsed"] == 0
    assert t["round_categories"]["truncated_thinking"] == 1 and t["round_categories"]["parse"] == 0
    assert t["direct_cut_off"] == 1 and t["cut_off_rounds"] == 2
