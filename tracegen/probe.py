"""A cheap headroom probe used to stratify splits before any expensive tracing.

It runs the built-in synthesizer (direct guess + one small WRITE search, no repairs) on every case
and reports the families where the program is right and the direct guess wrong. Splits then deal
those families over train, dev and test, so the test split is never a zero-headroom slice. With a
real model backend the probe is a proxy (the synthesizer's headroom, not the model's); a split can
instead be fixed with ``--split-manifest``.
"""
from __future__ import annotations

from dataclasses import replace

from cases import Case

from .backends import BackendConfig, get_backend
from .grading import headroom_families
from .rollout import RolloutConfig, trace_cases


def probe_headroom(cases: list[Case], sandbox, backend_config: BackendConfig, cfg: RolloutConfig) -> list[str]:
    probe_cfg = replace(cfg, max_repairs=0)
    synth = get_backend(replace(backend_config, name="synth", model=None, cache_dir=None))
    scored = [c for c in cases if c.scored]
    records = []
    for start in range(0, len(scored), cfg.wave_size):
        records += trace_cases(scored[start:start + cfg.wave_size], {}, synth, sandbox, probe_cfg)
    return headroom_families(records)
