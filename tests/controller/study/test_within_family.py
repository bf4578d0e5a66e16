"""The secondary analysis of the task type's value: case folds within families, the gap shares, the
run of the same learners with every family seen in training, and its report section."""
import copy

import pytest

from controller.report.within_family import within_family_md
from controller.study.experiment import ExperimentConfig
from controller.study.within_family import case_folds, gap_shares, within_family
from tracefactory import ANSWER, WRONG, make_record


def _typed_traces(families=6, per_family=5):
    """Half the families (the 'hard' type) never get a right program, the other half always do; the
    visible state is the same in both (the program passes the public example either way)."""
    recs = []
    for f in range(families):
        hard = f % 2 == 0
        split = ("train", "train", "dev", "test")[f % 4] if f < 4 else "train"
        for i in range(per_family):
            recs.append(make_record(f"t{f}/{i}", f"t{f}", split, direct=WRONG if not hard else ANSWER,
                                    rounds=[(True, WRONG if hard else ANSWER)]))
    return recs


def test_case_folds_deal_each_family_over_the_folds_seeded_and_blind_to_answers():
    recs = _typed_traces() + [make_record("small/0", "small", "train", rounds=[(True, ANSWER)])]
    folds, left = case_folds(recs, 5, seed=0)
    assert left == ["small"] and "small/0" not in folds
    for f in range(6):
        assert sorted(folds[f"t{f}/{i}"] for i in range(5)) == [0, 1, 2, 3, 4]  # one case per fold
    swapped = copy.deepcopy(recs)
    for r in swapped:
        r["hidden"]["answer"] = [["other"]]
    assert case_folds(swapped, 5, seed=0) == (folds, left)
    assert case_folds(recs, 5, seed=1)[0] != folds


def test_gap_shares_known_answers():
    pooled = {"always_tool_visible": {"exact": 10, "n": 20, "program_generations": 40},
              "oracle_seq": {"exact": 14, "n": 20, "program_generations": 20},
              "learned_rule": {"exact": 12, "n": 20, "program_generations": 30}}
    g = gap_shares(pooled)
    assert g["learned_rule"]["accuracy_gap_share"] == 0.5 and g["learned_rule"]["generation_gap_share"] == 0.5
    assert g["oracle_seq"]["accuracy_gap_share"] == 1.0 and g["always_tool_visible"]["generation_gap_share"] == 0.0
    assert gap_shares({"learned_rule": pooled["learned_rule"]}) == {}


@pytest.mark.slow  # five folds of every fixed policy, the rule and the ceiling: ~15 s on a quiet machine
def test_within_family_cv_scores_every_case_once_and_is_reported_as_secondary():
    """Every case held out once with its family in training; the oracle and always-tool pooled as
    in the family CV; the report's section labelled secondary, primary and secondary side by side."""
    recs = _typed_traces()
    w = within_family(recs, ExperimentConfig(cv_folds=5, rule_lambdas=(0.0,)), log=lambda *a: None)
    assert w["n"] == 30 and w["families"] == 6 and w["families_left_out"] == 0
    assert w["test_family_in_training"] == 30
    pooled = w["pooled"]
    assert pooled["oracle_seq"]["n"] == 30 and pooled["oracle_seq"]["exact"] == 30
    assert pooled["always_tool_visible"]["exact"] == 15 and "learned_rule" in pooled
    assert w["gap_shares"]["oracle_seq"]["accuracy_gap_share"] == 1.0
    assert w["ceiling"]["scope"].startswith("within families")
    summary = {"within_family": w, "cv": {"pooled": pooled}}
    md = "\n".join(within_family_md(summary))
    assert md.startswith("## Secondary: the value of the task type") and "does not replace the family-disjoint" in md
    assert "| `learned_rule` |" in md and "| `oracle_seq` | 30/30 |" in md


def test_no_family_with_enough_cases_says_why():
    recs = [make_record(f"f{i}/0", f"f{i}", "train", rounds=[(True, ANSWER)]) for i in range(6)]
    w = within_family(recs, ExperimentConfig(cv_folds=5), log=lambda *a: None)
    assert w["reason"].startswith("no family has 3 or more scored cases") and w["families_left_out"] == 6
    assert "Not run: no family has 3" in "\n".join(within_family_md({"within_family": w}))
