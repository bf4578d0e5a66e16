"""Known answers for controller/study/confidence.py: the AUC of each confidence feature per decision
point, families resampled for its interval, absent features counted as missing (never as 0)."""
import copy

from controller.report.confidence import confidence_md
from controller.study.confidence import _auc, confidence_table
from tracefactory import ANSWER, WRONG, make_record


def _with_lp(rec, direct_mean, round_means=()):
    rec = copy.deepcopy(rec)
    rec["schema_version"] = 3
    rec["direct"]["logprobs"] = {"mean": direct_mean, "min": direct_mean - 1, "sum": direct_mean * 4,
                                 "tokens": 4, "source": "hf"}
    for r, m in zip(rec["rounds"], round_means):
        r["logprobs"] = {"mean": m, "min": m - 1, "sum": m * 4, "tokens": 4, "source": "hf"}
    return rec


def test_auc_known_answers():
    assert _auc([1, 1, 0, 0], [0.9, 0.8, 0.1, 0.2]) == 1.0
    assert _auc([1, 0], [0.1, 0.9]) == 0.0
    assert _auc([1, 0], [0.5, 0.5]) == 0.5
    assert _auc([1, 1], [0.1, 0.2]) is None


def test_direct_confidence_separates_right_from_wrong_at_the_start():
    recs = []
    for i in range(6):
        right = i % 2 == 0
        base = make_record(f"fam_{i}/c", f"fam_{i}", direct=ANSWER if right else WRONG,
                           rounds=[(False, WRONG), (False, WRONG)])
        recs.append(_with_lp(base, -0.1 if right else -2.0, (-0.5, -0.6)))
    recs.append(make_record("fam_x/c", "fam_x", rounds=[(False, WRONG)]))  # synth: no logprobs
    c = confidence_table(recs, boot=200)
    assert c["recorded"] == 6 and c["n"] == 7
    row = next(r for r in c["rows"] if r["point"] == 0 and r["feature"] == "direct_logprob_mean"
               and r["label"] == "direct_right")
    assert row["auc"] == 1.0 and row["n"] == 6 and row["positives"] == 3 and row["missing"] == 1
    assert row["families"] == 6 and row["auc_ci95"][1] == 1.0
    # before fix 1 the latest program's confidence is there too; at the start it is not
    feats = {(r["point"], r["feature"]) for r in c["rows"]}
    assert (1, "last_logprob_mean") in feats and (0, "last_logprob_mean") not in feats
    md = "\n".join(confidence_md({"confidence": c}))
    assert "separate right from wrong" in md and "direct_logprob_mean" in md


def test_no_section_without_recorded_logprobs():
    recs = [make_record(f"fam_{i}/c", f"fam_{i}", rounds=[(False, WRONG)]) for i in range(3)]
    c = confidence_table(recs)
    assert c["rows"] == [] and c["recorded"] == 0 and confidence_md({"confidence": c}) == []
