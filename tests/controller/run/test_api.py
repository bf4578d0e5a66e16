"""The Python API of docs/api.md: its examples run as written, and the configs stand alone."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "api.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.mark.parametrize("i", range(len(_blocks())))
def test_every_python_block_of_the_api_page_runs(tmp_path, i):
    script = tmp_path / f"block{i}.py"
    script.write_text(_blocks()[i])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=env)  # this checkout's packages, whatever is installed
    assert r.returncode == 0, r.stderr[-3000:]


def test_configs_are_complete_with_their_defaults():
    from controller import ExperimentConfig, LoraPolicyConfig, RunConfig

    assert ExperimentConfig(train_lora=True).lora == LoraPolicyConfig()  # was a TypeError at training
    cfg = RunConfig(root="/tmp/somewhere", split_seed=4).resolved()
    assert cfg.experiment.adapters_dir == "/tmp/somewhere/reports/adapters"
    assert cfg.experiment.lora.cache_dir == "/tmp/somewhere/reports/cache/tiny_base"
    assert cfg.experiment.split_seed == 4


def test_derived_values_leave_the_callers_configs_alone():
    from controller import BackendConfig, ExperimentConfig, RunConfig

    b, e = BackendConfig(name="hf", model="m"), ExperimentConfig()
    given = RunConfig(root="/tmp/r", backend=b, experiment=e, progress=False)
    cfg = given.resolved()
    assert cfg.backend.cache_dir == "/tmp/r/reports/cache/generations" and b.cache_dir is None
    assert not cfg.experiment.progress and e.progress and not cfg.rollout.progress
    assert given.backend is b and given.experiment is e  # a config holds what it was given
    assert RunConfig(backend=BackendConfig(name="hf", model="m", cache_dir="none")).resolved().backend.cache_dir is None


@pytest.mark.parametrize("build, field, needle", [
    (lambda c: c.BackendConfig(temperature=-1), "temperature", ">= 0"),
    (lambda c: c.BackendConfig(name="hf", tensor_parallel_size=2), "tensor_parallel_size", "name vllm"),
    (lambda c: c.RolloutConfig(max_repairs=-1), "max_repairs", ">= 0"),
    (lambda c: c.ExperimentConfig(cv_folds=1), "cv_folds", "2 folds"),
    (lambda c: c.ExperimentConfig(cost="dollars"), "cost", "dollars"),
    (lambda c: c.ExperimentConfig(split_seeds=2), "split_seeds", "cv_folds"),
    (lambda c: c.LoraPolicyConfig(max_steps=0), "max_steps", ">= 1"),
    (lambda c: c.RunConfig(resume=True), "resume", "generate_traces"),
    (lambda c: c.RunConfig(workers=0), "workers", "> 0"),
])
def test_configs_check_themselves_naming_fields_not_flags(build, field, needle):
    import controller
    from controller import ConfigError

    with pytest.raises(ConfigError) as err:
        build(controller)
    assert err.value.field == field and needle in str(err.value) and not str(err.value).startswith("-")
