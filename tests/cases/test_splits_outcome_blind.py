"""Splits never read answers: permuting TestAnswer across case files leaves split_families unchanged.

Runs the pipeline's own split step (``controller.pipeline._splits``) on real Foofah files copied
to a temporary folder, once as shipped and once with every TestAnswer moved to another file.
With ``--headroom-probe`` the split may read answers, but only of the probe cases it lists; those
are left out of every score, so permuting the other answers must not move a family either.
"""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from cases import load_cases, make_cv_folds
from controller.pipeline import RunConfig, _splits

FOOFAH = Path(__file__).resolve().parents[2] / "cases" / "foofah"
# 12 families x 5 files: enough for a train/dev/test split and a probe per family
FAMILIES = sorted({p.name.rsplit("_", 1)[0] for p in FOOFAH.glob("exp0_*.txt")})[:12]


def _copy(dst: Path) -> list[Path]:
    dst.mkdir()
    files = [p for p in sorted(FOOFAH.glob("exp0_*.txt")) if p.name.rsplit("_", 1)[0] in FAMILIES]
    for p in files:
        shutil.copy(p, dst / p.name)
    return [dst / p.name for p in files]


def _permute_answers(files: list[Path], seed: int, keep: frozenset = frozenset()) -> int:
    """Move each TestAnswer to another file (except files named in ``keep``); returns moves."""
    movable = [f for f in files if f.stem not in keep]
    objs = {f: json.loads(f.read_text()) for f in movable}
    answers = [objs[f]["TestAnswer"] for f in movable]
    order = list(range(len(movable)))
    random.Random(seed).shuffle(order)
    moved = 0
    for f, j in zip(movable, order):
        moved += objs[f]["TestAnswer"] != answers[j]
        objs[f]["TestAnswer"] = answers[j]
        f.write_text(json.dumps(objs[f]))
    return moved


class _NoSandbox:
    def __enter__(self):
        raise AssertionError("the default split must not run anything")

    def __exit__(self, *a):
        return False


def test_default_split_ignores_answers(tmp_path):
    files = _copy(tmp_path / "cases")
    cfg = RunConfig(root=str(tmp_path), split_seed=5)
    before, info = _splits(cfg, load_cases(tmp_path / "cases"), _NoSandbox, log=lambda *a: None)
    assert info["method"] == "seeded_shuffle" and info["probe_case_ids"] == []
    assert _permute_answers(files, seed=1) > 30
    after, _ = _splits(cfg, load_cases(tmp_path / "cases"), _NoSandbox, log=lambda *a: None)
    assert after == before
    fams = sorted(FAMILIES)
    assert make_cv_folds(fams, k=3, seed=5) == make_cv_folds(list(reversed(fams)), k=3, seed=5)


def test_headroom_probe_reads_only_its_probe_cases(tmp_path):
    from sandbox import Sandbox

    files = _copy(tmp_path / "cases")
    cfg = RunConfig(root=str(tmp_path), split_seed=2, headroom_probe=True)
    cfg.rollout.progress = False
    cases = load_cases(tmp_path / "cases")
    before, info = _splits(cfg, cases, lambda: Sandbox(workers=1), log=lambda *a: None)
    probes = info["probe_case_ids"]
    assert info["method"] == "headroom_probe"
    by_id = {c.case_id: c for c in cases}
    # one per family (every family here has 5 files)
    assert len({by_id[p].family for p in probes}) == len(probes) == len({c.family for c in cases})
    assert _permute_answers(files, seed=3, keep=frozenset(Path(p).name for p in probes)) > 20
    after, info2 = _splits(cfg, load_cases(tmp_path / "cases"), lambda: Sandbox(workers=1), log=lambda *a: None)
    assert info2["probe_case_ids"] == probes and after == before


@pytest.mark.parametrize("seed", [0, 1])
def test_probe_cases_depend_on_ids_and_seed_only(seed):
    from cases import probe_cases

    ids = {"a": ["a_1", "a_2", "a_3"], "b": ["b_1", "b_2"], "c": ["c_1"]}
    got = probe_cases(ids, seed=seed)
    assert got == probe_cases({k: list(reversed(v)) for k, v in reversed(ids.items())}, seed=seed)
    assert len(got) == 2 and not any(g.startswith("c") for g in got)  # single-case family: no probe
