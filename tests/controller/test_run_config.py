"""A run's config (controller/config.py): derived paths follow the root they are resolved
against, so a config copied to another root runs there."""
import dataclasses

from controller import BackendConfig, RunConfig
from tracegen.backends.synth import SynthBackend

from e2e_helpers import small_case_dir


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
