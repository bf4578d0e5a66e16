"""A cheap headroom probe used to stratify splits before any expensive tracing.

It runs the built-in synthesizer (direct guess + one small WRITE search, no repairs) on every case
and reports the families where the program is right and the direct guess wrong. Splits then deal
those families over train, dev and test, so the test split is never a zero-headroom slice. With a
real model backend the probe is a proxy (the synthesizer's headroom, not the model's); a split can
instead be fixed with ``--split-manifest``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from cases import Case

from .backends import Backend, BackendConfig, Completion, GenerationRequest, get_backend
from .backends.base import in_order
from .grading import headroom_families
from .rollout import RolloutConfig, trace_cases


class Memo(Backend):
    """Remembers a deterministic backend's completions in memory, so that when the run itself
    uses the synthesizer its direct answers and first programs are computed once, not twice."""

    def __init__(self, inner: Backend):
        super().__init__(inner.config)
        self.inner, self.name = inner, inner.name
        self._memo: dict[tuple, Completion] = {}

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def streams(self) -> bool:
        return bool(getattr(self.inner, "streams", False))

    @staticmethod
    def _key(r: GenerationRequest) -> tuple:
        return r.kind, r.task.case_id, r.round, r.sample, r.previous_code

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        return in_order(self.generate_iter(requests), len(requests))

    def generate_iter(self, requests: list[GenerationRequest]) -> Iterator[tuple[int, Completion]]:
        """The remembered answers first, then the inner backend's (as they finish, when it streams)."""
        keys = [self._key(r) for r in requests]
        todo: dict[tuple, list[int]] = {}  # each new key once, with every request that asks it
        for i, k in enumerate(keys):
            if k in self._memo:
                yield i, replace(self._memo[k])
            else:
                todo.setdefault(k, []).append(i)
        if not todo:
            return
        firsts = [ids[0] for ids in todo.values()]
        for j, comp in self.inner.generate_iter([requests[i] for i in firsts]):
            self._memo[keys[firsts[j]]] = comp
            for i in todo[keys[firsts[j]]]:
                yield i, replace(comp)

    def close(self) -> None:
        self.inner.close()


def probe_headroom(cases: list[Case], sandbox, backend_config: BackendConfig, cfg: RolloutConfig,
                   synth: Backend | None = None) -> list[str]:
    """``synth``: the run's own synthesizer backend (a ``Memo``) to share work with, if it has one."""
    probe_cfg = replace(cfg, max_repairs=0, program_samples=1)
    if synth is None:
        synth = get_backend(replace(backend_config, name="synth", model=None, cache_dir=None))
    from .progress import Progress

    scored = [c for c in cases if c.scored]
    records = []
    bar = Progress(len(scored), "headroom probe", enabled=cfg.progress)
    try:
        for start in range(0, len(scored), cfg.wave_size):
            records += trace_cases(scored[start:start + cfg.wave_size], {}, synth, sandbox, probe_cfg,
                                   lambda n, stage: bar.update(n))
    finally:
        bar.close()
    return headroom_families(records)
