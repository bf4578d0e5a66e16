"""Family-disjoint splits, cross-validation folds and the split manifest."""
from __future__ import annotations

import json

import pytest

from cases import (
    SplitError,
    default_split_sizes,
    load_split_manifest,
    make_cv_folds,
    make_splits,
    split_manifest,
)

FAMS = [f"fam{i:02d}" for i in range(40)]
HEAD = ["fam03", "fam11", "fam17", "fam25", "fam31", "fam38"]


def test_splits_disjoint_cover_and_sized():
    s = make_splits(FAMS + FAMS[:5], n_test=10, n_dev=8, seed=1, headroom=HEAD)  # repeats collapse
    assert set(s) == {"train", "dev", "test"}
    assert (len(s["test"]), len(s["dev"]), len(s["train"])) == (10, 8, 22)
    all_fams = s["train"] + s["dev"] + s["test"]
    assert sorted(all_fams) == sorted(FAMS)
    assert all(s[k] == sorted(s[k]) for k in s)


@pytest.mark.parametrize("seed", range(8))
def test_headroom_in_every_split(seed):
    s = make_splits(FAMS, n_test=10, n_dev=8, seed=seed, headroom=HEAD)
    for split in ("train", "dev", "test"):
        assert len(set(s[split]) & set(HEAD)) == 2, (split, s)


def test_headroom_with_tiny_splits_and_unknown_names():
    s = make_splits(FAMS[:6], n_test=1, n_dev=1, seed=3, headroom=["fam00", "fam01", "fam02", "fam04", "nope"])
    assert sorted(s["test"] + s["dev"] + s["train"]) == FAMS[:6]
    assert len(s["test"]) == 1 and len(s["dev"]) == 1
    head = {"fam00", "fam01", "fam02", "fam04"}
    assert set(s["test"]) <= head and set(s["dev"]) <= head  # headroom dealt to test and dev first


def test_splits_deterministic_and_seed_dependent():
    a = make_splits(FAMS, n_test=10, n_dev=8, seed=7, headroom=HEAD)
    assert a == make_splits(list(reversed(FAMS)), n_test=10, n_dev=8, seed=7, headroom=list(reversed(HEAD)))
    others = [make_splits(FAMS, n_test=10, n_dev=8, seed=s, headroom=HEAD) for s in range(1, 5)]
    assert any(o != a for o in others)


def test_zero_dev_allowed():
    s = make_splits(FAMS[:4], n_test=1, n_dev=0, seed=0, headroom=FAMS[:2])
    assert s["dev"] == [] and len(s["train"]) == 3


@pytest.mark.parametrize("kw,needle", [
    ({"n_test": 0, "n_dev": 1}, "n_test"),
    ({"n_test": 2, "n_dev": -1}, "n_dev"),
    ({"n_test": 3, "n_dev": 2}, "no training family"),
    ({"n_test": 4, "n_dev": 2}, "no training family"),
])
def test_split_errors(kw, needle):
    with pytest.raises(SplitError, match=needle) as info:
        make_splits(FAMS[:5], seed=0, **kw)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("n", [3, 4, 5, 10, 32, 41, 200])
def test_default_split_sizes(n):
    n_test, n_dev = default_split_sizes(n)
    assert n_test >= 1 and n_dev >= 1 and n - n_test - n_dev >= 1
    if n >= 20:
        assert abs(n_test - 0.25 * n) <= 1 and abs(n_dev - 0.2 * n) <= 1
    make_splits([f"f{i}" for i in range(n)], n_test=n_test, n_dev=n_dev, seed=0)


def test_default_split_sizes_too_few():
    with pytest.raises(SplitError):
        default_split_sizes(2)


@pytest.mark.parametrize("k", [2, 5, 7])
def test_cv_folds(k):
    folds = make_cv_folds(FAMS, k=k, seed=4, headroom=HEAD)
    assert len(folds) == k
    flat = [f for fold in folds for f in fold]
    assert sorted(flat) == FAMS and len(flat) == len(set(flat))
    sizes = [len(f) for f in folds]
    assert max(sizes) - min(sizes) <= 1
    head_counts = [len(set(f) & set(HEAD)) for f in folds]
    assert max(head_counts) - min(head_counts) <= 1
    assert folds == make_cv_folds(FAMS, k=k, seed=4, headroom=HEAD)


@pytest.mark.parametrize("k", [1, 0, 41])
def test_cv_fold_errors(k):
    with pytest.raises(SplitError):
        make_cv_folds(FAMS, k=k, seed=0)


def test_manifest_roundtrip(tmp_path):
    s = make_splits(FAMS, n_test=10, n_dev=8, seed=5, headroom=HEAD)
    m = split_manifest(s, seed=5, sizes=(10, 8), headroom=HEAD, case_counts={"train": 110, "dev": 40, "test": 50})
    assert m["split_families"] == s and m["seed"] == 5
    assert m["sizes"] == {"test": 10, "dev": 8}
    assert m["headroom_families"] == sorted(HEAD)
    assert m["case_counts"] == {"train": 110, "dev": 40, "test": 50}
    path = tmp_path / "split_manifest.json"
    path.write_text(json.dumps(m))
    assert load_split_manifest(path) == s


def _manifest(tmp_path, obj, raw=None):
    path = tmp_path / "m.json"
    path.write_text(raw if raw is not None else json.dumps(obj))
    return path


@pytest.mark.parametrize("obj,raw,needle", [
    (None, "{oops", "not valid JSON"),
    ({"seed": 1}, None, "no split_families"),
    ({"split_families": {"train": [], "test": []}}, None, "exactly train, dev and test"),
    ({"split_families": {"train": ["a"], "dev": "b", "test": []}}, None, "split_families.dev"),
    ({"split_families": {"train": ["a"], "dev": ["b"], "test": ["a"]}}, None, "in both train and test"),
    ({"split_families": {"train": ["a", "a"], "dev": [], "test": ["b"]}}, None, "twice"),
])
def test_manifest_errors_name_the_file(tmp_path, obj, raw, needle):
    path = _manifest(tmp_path, obj, raw)
    with pytest.raises(SplitError, match=needle) as info:
        load_split_manifest(path)
    assert str(info.value).startswith(f"{path}: ")


def test_manifest_missing_file(tmp_path):
    with pytest.raises(SplitError, match="no such file"):
        load_split_manifest(tmp_path / "nope.json")
