"""Visible state of tasks over any value: shape features where the values have a shape (rows and
columns for 2-D values, rows alone for flat lists), absent (never 0) where they have none, and the
learners take a state with absent features."""
import math

from controller.env.state import ALL_FEATURE_NAMES, COL_FEATURES, ROW_FEATURES, absent_features, visible_state
from tracefactory import make_record


def _record(examples, test_input, value_type, direct, out, answer):
    rec = make_record("v/v_1", "v", rounds=[(True, out)], direct=direct, answer=answer)
    rec["schema_version"] = 4
    rec["task"] = {"examples": [{"input": x, "output": y} for x, y in examples], "test_input": test_input,
                   "value_type": value_type, "entry": "transform"}
    rec["direct"] = {("value" if k == "table" else k): v for k, v in rec["direct"].items()}
    rec["rounds"][0]["visible"]["output"] = examples[0][1]
    return rec


def test_grids_have_every_shape_feature_pooled_over_their_examples():
    ex = [([[0, 1, 1]], [[1, 1, 0]]), ([[0, 2, 2, 0], [0, 0, 0, 0]], [[2, 2, 0, 0], [0, 0, 0, 0]])]
    rec = _record(ex, [[0, 0, 3], [3, 0, 0]], "grid", [[0, 3, 0], [0, 0, 3]], [[0, 3, 0]], [[0, 3, 0], [0, 0, 3]])
    f = visible_state(rec, (1,)).features
    assert set(ALL_FEATURE_NAMES) <= set(f)
    assert f["example_rows_ratio"] == 1.0 and f["test_rows_vs_example"] == 2 / 1.5
    # widths vary, each example keeps its input's: the new input's width is the prediction
    assert f["direct_cols_match_example"] == 1.0 and f["direct_rows_vs_ratio"] == 0.0
    assert f["prog_rows_vs_ratio"] == -0.5 and f["last_pass"] == 1.0


def test_flat_lists_have_rows_and_no_columns():
    rec = _record([([3, 1, 2], [1, 2, 3])], [5, 4], "json", [4, 5], [4, 5], [4, 5])
    s = visible_state(rec, (1,))
    assert not (COL_FEATURES & set(s.features)) and ROW_FEATURES <= set(s.features)
    assert s.features["direct_rows_vs_ratio"] == 0.0 and s.features["prog_equals_direct"] == 1.0
    assert "cols_match=na" in s.text


def test_strings_have_no_shape_features_at_all():
    rec = _record([("ab", "AB")], "cd", "json", "CD", "CD", "CD")
    for pos in ((), (1,)):
        s = visible_state(rec, pos)
        assert not (absent_features(0) & set(s.features))
        assert set(ALL_FEATURE_NAMES) - absent_features(0) <= set(s.features)
    assert s.features["prog_equals_direct"] == 1.0 and "rows_off=na" in s.text


def test_a_learner_takes_states_with_absent_features():
    import numpy as np

    from controller.learn.rule import _make, _matrix

    rows = [visible_state(_record([("ab", "AB")], "cd", "json", d, "CD", "CD"), ()) for d in ("CD", "x", None)]
    grid = visible_state(_record([([[1]], [[2]])], [[1]], "grid", [[2]], [[2]], [[2]]), ())
    X = _matrix(rows + [grid], ALL_FEATURE_NAMES)
    assert np.isnan(X[0]).any() and not np.isnan(X[3]).any()
    y = ["DIRECT", "WRITE", "WRITE", "DIRECT"]
    for name in ("tree_depth_3", "logistic", "forest"):
        model = _make(name, 0).fit(X, y)
        assert set(model.predict(X)) <= {"DIRECT", "WRITE"}
    assert not math.isnan(sum(_matrix([grid], ALL_FEATURE_NAMES)[0]))
