"""The LoRA policy is refit at every split seed (issue 32): each fold of each split seed trains
its own adapter, under a tag naming the split seed beyond the base one."""
from __future__ import annotations

import pytest

from controller.study.experiment import ExperimentConfig
from controller.study.split_seeds import split_seed_outcomes
from test_experiment_study import _records
from test_split_seeds import _CountingFit


@pytest.mark.slow
def test_lora_refit_per_fold_at_every_split_seed(monkeypatch):
    import controller.learn.registry as learners  # the LoRA learner's entry trains through lora_fit

    counter = _CountingFit()
    monkeypatch.setattr(learners, "lora_fit", counter)
    cfg = ExperimentConfig(progress=False, frontier_lambdas=(0.0,), train_lora=True, cv_folds=3, split_seeds=2)
    per_seed = split_seed_outcomes(_records(), cfg, log=lambda *a: None)
    names = [n for n, _ in counter.calls]
    assert names == ["lora_cv0", "lora_cv1", "lora_cv2", "lora_s1_cv0", "lora_s1_cv1", "lora_s1_cv2"]
    for entry in per_seed:
        assert any(r["policy"] == "lora_seq_policy" for r in entry["records"]), entry["split_seed"]
