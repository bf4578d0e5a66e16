"""A run's whole config (controller/config.py, controller/args.py): derived paths follow the root
they are resolved against, so a config copied to another root runs there; every run writes
reports/config.toml, every field by its path, and ``--config`` reads it back to the same config
and the same traces."""
import dataclasses
import functools
import hashlib
import json

import pytest

from controller import BackendConfig, ExperimentConfig, LoraPolicyConfig, RolloutConfig, RunConfig, cli
from tracegen.backends.synth import SynthBackend

from e2e_helpers import run_records, small_case_dir, untimed


def parse(*argv):
    return cli.build_config(cli.make_parser().parse_args([str(a) for a in argv]))


def test_derived_paths_follow_the_root_of_a_copied_config():
    a = RunConfig(root="/tmp/a", split_seed=3, backend=BackendConfig(name="hf", model="m"))
    b = dataclasses.replace(a, root="/tmp/b", split_seed=5).resolved()
    assert b.backend.cache_dir == "/tmp/b/reports/cache/generations"
    assert b.experiment.adapters_dir == "/tmp/b/reports/adapters"
    assert b.experiment.lora.cache_dir == "/tmp/b/reports/cache/tiny_base"
    assert b.experiment.split_seed == 5
    assert a.backend.cache_dir is None and a.experiment.adapters_dir == "reports/adapters"  # a holds what it was given


class CachingSynth(SynthBackend):
    """The synthesizer as a backend that keeps a generation cache (as model backends do)."""

    caches_generations = True


def test_a_run_of_a_config_copied_to_another_root_works_there(tmp_path, monkeypatch):
    """A Python sweep over roots: the run of a copy made for root b caches, trains its adapters and
    builds its tiny base under b, not under the first root (the RunConfig before this one baked
    them in when built, and ``replace`` kept them). Stops where the run has checked its inputs."""
    import controller.pipeline as pipeline
    from tracegen.backends import _REGISTRY

    monkeypatch.setitem(_REGISTRY, "caching_synth", f"{__name__}:CachingSynth")
    seen = []
    monkeypatch.setattr(pipeline, "_run_checked", lambda cfg, *a, **k: seen.append(cfg) or {})
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    first = RunConfig(root=str(tmp_path / "a"), cases=str(cases), generate_traces=True, progress=False,
                      backend=BackendConfig(name="caching_synth"))
    pipeline.run(dataclasses.replace(first, root=str(tmp_path / "b")), log=lambda *a: None)
    b = tmp_path / "b" / "reports"
    assert seen[0].backend.cache_dir == str(b / "cache" / "generations")
    assert seen[0].experiment.adapters_dir == str(b / "adapters")
    assert seen[0].experiment.lora.cache_dir == str(b / "cache" / "tiny_base")


def _odd_config() -> RunConfig:
    """A config with no field at its default (where the checks allow), and fields no flag sets."""
    return RunConfig(
        root="/r o/ot", cases="library", generate_traces=True, resume=True, force=True, allow_partial=True, tag="t1", limit_total=7,
        cases_per_family=2, progress=False, export_sft=True, sft_max_tokens=512, sft_splits="all", split_seed=4,
        test_families=2, dev_families=1, split_manifest="m.json", headroom_probe=True, workers=3,
        backend=BackendConfig(name="vllm", model='q"uote\\d', temperature=0.7, top_p=0.9, top_k=5, seed=11,
                              max_new_tokens=77, batch_size=3, concurrency=2, enable_thinking=True, dtype="float16",
                              device="cpu", base_url="http://a:1/v1,http://b:2/v1", api_key_env="K",
                              request_timeout_s=9.5, chat_template_kwargs=False, max_retries=1, replay_path="old.jsonl",
                              cache_dir="none",
                              synth_write_nodes=5, synth_fix_nodes=50, synth_compact=True, synth_time_budget_s=2.5,
                              tensor_parallel_size=2, pipeline_parallel_size=3, data_parallel_size=4,
                              distributed_executor_backend="ray",
                              extra={"max_model_len": 8192, "enforce_eager": True, "synth_workers": 1,
                                     "retry_base_s": 0.25}),
        rollout=RolloutConfig(max_repairs=3, exec_timeout_s=0.5, memory_mb=128, wave_size=8, progress_every=3,
                              progress=False, program_samples=2, repair_history=True, request_slice=4,
                              sandbox_runtime={"modules": ["numpy"], "globals": {"np": "numpy"}, "input": "array"}),
        experiment=ExperimentConfig(seed=12, train_lora=True, train_shuffled_lora=True, dagger_iters=2,
                                    dagger_beta=0.25, cv_folds=3, cost="tokens", seeds=2, frontier_lambdas=(0.0, 1.0),
                                    rule_lambdas=(0.1,), margin=0.05, lora_frontier_lambdas=(0.5,),
                                    policies=("direct_only", "always_tool_visible"), progress=False,
                                    bootstrap_resamples=99, adapters_dir="/x/adapters", study="s.toml", model_card=__file__,
                                    split_seed=4, split_seeds=2, nested_rule=True, nested_folds=3, confidence=False,
                                    within_family=False,
                                    lora=LoraPolicyConfig(base_model="smollm2", cache_dir="/x/tiny", max_steps=3,
                                                          learning_rate=1e-4, batch_size=2, grad_accum=2,
                                                          max_length=64, lora_r=2, lora_alpha=4, lora_dropout=0.0,
                                                          seed=13, device="cpu", cpu_threads=1, eval_batch_size=8,
                                                          shuffle_labels=True, lora_layers=1, score_mode="sequence",
                                                          eval_every=0, prompt="task", patience=2)))


def test_config_text_holds_every_field_and_reads_back_to_the_same_config(tmp_path):
    from controller.args import _walk, config_text

    cfg = _odd_config()
    default = RunConfig()
    # the odd config sets every field (vllm refuses 4-bit weights; only the imported backend reads an import file)
    for path, _, _ in _walk(RunConfig):
        if path not in ("backend.load_in_4bit", "backend.import_path"):
            assert functools.reduce(getattr, path.split("."), cfg) != functools.reduce(getattr, path.split("."), default), path
    f = tmp_path / "config.toml"
    f.write_text(config_text(cfg))
    assert parse("--config", f) == cfg
    assert config_text(parse("--config", f)) == f.read_text()
    # the command line still wins, and a shared flag given there sets every field it names
    again = parse("--config", f, "--max-repairs", "1", "--seed", "2", "--root", "/else")
    assert (again.rollout.max_repairs, again.backend.seed, again.experiment.seed, again.root) == (1, 2, 2, "/else")
    assert again.experiment.bootstrap_resamples == 99 and again.backend.extra["synth_workers"] == 1


def test_config_files_take_field_paths_and_flag_names_alike(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('max_repairs = 1\ngen_batch_size = 4\nno_progress = true\n'  # flag names, as before
                 '[backend]\ntemperature = 0.5\nrequest_timeout_s = 7\n[backend.extra]\nmax_model_len = 1024\n'
                 '[experiment]\nseed = 3\n[experiment.lora]\nbatch_size = 2\n')
    cfg = parse("--config", f)
    assert (cfg.rollout.max_repairs, cfg.backend.batch_size, cfg.progress) == (1, 4, False)
    assert (cfg.backend.temperature, cfg.backend.request_timeout_s, cfg.backend.extra) == (0.5, 7.0, {"max_model_len": 1024})
    assert (cfg.experiment.seed, cfg.backend.seed, cfg.experiment.lora.batch_size) == (3, 0, 2)
    f.write_text("[rollout]\nmax_repair = 1\n")
    r = cli.make_parser()
    try:
        r.parse_args(["--config", str(f)])
    except SystemExit as exit_:
        assert exit_.code == 2
    else:
        raise AssertionError("an unknown field path was accepted")


def _digest(records) -> str:
    return hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()


@pytest.mark.slow
def test_the_written_config_toml_reproduces_the_run(run_cli, tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=2)
    a, b = tmp_path / "a", tmp_path / "b"
    r = run_cli("--root", a, "--cases", cases, "--generate-traces", "--limit-total", 6, "--max-repairs", 1,
                "--program-samples", 2, "--synth-fix-nodes", 2000, "--no-progress")
    assert r.returncode == 0, r.stderr[-2000:]
    written = a / "reports" / "config.toml"
    assert parse("--config", written) == parse("--root", a, "--cases", cases, "--generate-traces", "--limit-total", 6,
                                              "--max-repairs", 1, "--program-samples", 2, "--synth-fix-nodes", 2000,
                                              "--no-progress")
    r = run_cli("--config", written, "--root", b)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _digest(run_records(a)) == _digest(run_records(b))  # the traces, timing fields aside
    ta, tb = (json.loads((x / "reports" / "run_config.json").read_text())["trace_config"] for x in (a, b))
    assert ta == tb
    sa, sb = (json.loads((x / "reports" / "final_summary.json").read_text()) for x in (a, b))
    assert untimed(sa["policy_results"]) == untimed(sb["policy_results"])  # sandbox_ms aside
    assert (b / "reports" / "config.toml").read_text() == written.read_text().replace(f'"{a}"', f'"{b}"')
    # run_config.json and the summary's config are config.toml read back: one spelling, every setting
    import tomllib

    toml = tomllib.loads(written.read_text())
    conf = json.loads((a / "reports" / "run_config.json").read_text())["config"]
    assert {k: v for k, v in conf.items() if k != "resolved"} == toml, "run_config.json's config is config.toml's"
    assert conf["resolved"]["experiment.adapters_dir"] == str(a / "reports" / "adapters")  # what the run worked with
    assert {k: v for k, v in sa["config"].items() if k in toml} == toml and sa["config"]["resolved"] == conf["resolved"]
    assert sa["config"]["rollout"]["program_samples"] == 2 and sa["config"]["rollout"]["max_repairs"] == 1
