"""One run, end to end: cases -> splits -> traces -> controllers -> reports.

``run(cfg)`` is what the CLI calls. Everything that can be checked before spending compute
(flags, case files, split requests, an existing trace file, a resumed run's configuration) is
checked first; a problem raises ``UsageError`` with one line and nothing is written.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from cases import (CaseError, SplitError, default_split_sizes, load_cases, make_splits, probe_cases,
                   read_split_manifest, resolve_case_set, split_manifest)
from tracegen.backends import BackendConfig, PartialGeneration, available_backends, backend_class
from tracegen.backends.replay import ReplayMissError
from tracegen.errors import ConfigError, check
from tracegen.records import TraceFileError, read_traces, repair_torn_tail
from tracegen.rollout import RolloutConfig

from controller.learn.lora import LoraPolicyConfig
from controller.study.experiment import ExperimentConfig, run_experiment
from controller.env.registry import names
from controller.report.outputs import atomic_write_json
from controller.run_folder import reports_dir as _reports, run_config_path as _run_config_path
from controller.run_folder import set_previous_run_aside, trace_path, write_outputs

TRACING_NICE = 10  # niceness of the imports done while tracing keeps the cores busy
# what the controllers, statistics and figures import (~4 s on a 2-core machine): a run that
# traces imports them in a niced thread meanwhile, while it mostly waits for the pool
WARM_MODULES = ("sklearn.linear_model", "sklearn.ensemble", "sklearn.tree", "sklearn.pipeline",
                "sklearn.preprocessing", "scipy.stats", "statsmodels.stats.multitest",
                "statsmodels.stats.proportion", "statsmodels.stats.contingency_tables")


class UsageError(ConfigError):
    """Bad input found by a run (a case file, a trace file, a split request): one line naming the
    field (``field``, shown as its flag on the command line) or the file; the CLI exits with 2."""


def _f(default, help: str, **meta):
    return field(default=default, metadata={"help": help, **meta})


@dataclass
class RunConfig:
    """One run: where it writes, which cases, how they are split and traced, and the three
    configs of the stages (``backend``, ``rollout``, ``experiment``). Complete with its defaults:
    ``RunConfig()`` is the offline quickstart without LoRA; it checks its values when built."""

    root: str = _f(".", "run directory; outputs go to ROOT/reports")
    cases: str = _f("foofah", "case set: foofah (the Foofah benchmark, 250 files in 50 families; default), library (the "
                              "generated library, 41 families), or a directory of Foofah-format case files "
                              "(*.json, *.txt, recursive)")
    generate_traces: bool = _f(False, "trace the cases with the backend (else reuse the trace file)")
    resume: bool = _f(False, "continue an existing trace file, skipping cases already in it")
    force: bool = _f(False, "with --resume: continue even if trace-changing settings differ")
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
        b, r, e = self.backend, self.rollout, self.experiment
        check(self.workers > 0, "workers", f"must be > 0, got {self.workers}")
        for name in ("limit_total", "cases_per_family"):
            val = getattr(self, name)
            check(val is None or val > 0, name, f"must be > 0, got {val}")
        for name in ("test_families", "dev_families"):
            val = getattr(self, name)
            check(val is None or val >= 0, name, f"must be >= 0, got {val}")
        check(self.sft_max_tokens >= 0, "sft_max_tokens", f"must be >= 0 (0 or auto: the longest row), got {self.sft_max_tokens}")
        check(not self.resume or self.generate_traces, "resume", "only meaningful with `generate_traces`")
        kind = backend_class(b.name) if b.name in available_backends() else None  # unknown: refused where built
        if r.program_samples > 1 and b.temperature <= 0 and kind is not None and not kind.deterministic:
            raise ConfigError(f"`rollout.program_samples` {r.program_samples}: greedy decoding "
                              f"(`backend.temperature` 0) gives {b.name} the same program every time; sample with "
                              "`backend.temperature` > 0 (e.g. 0.7)")
        # derived defaults (new objects: the caller's configs are left as they were)
        reports = Path(self.root) / "reports"
        cache = b.cache_dir
        if cache is None and kind is not None and kind.caches_generations:
            cache = str(reports / "cache" / "generations")
        if cache == "none":
            cache = None
        if cache != b.cache_dir:
            self.backend = replace(b, cache_dir=cache)
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
        if changes:
            self.experiment = replace(e, **changes)
        if not self.progress and r.progress:
            self.rollout = replace(r, progress=False)


EXPERIMENT_DEFAULTS, LORA_DEFAULTS = ExperimentConfig(), LoraPolicyConfig()


# ---- inputs ---------------------------------------------------------------------------------

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


def _case_set_digest(cases) -> str:
    h = hashlib.sha256()
    for c in cases:
        h.update(json.dumps([c.case_id, c.input_table, c.output_table, c.test_table, c.test_answer]).encode())
    return h.hexdigest()[:16]


def trace_config(cfg: RunConfig, cases) -> dict:
    """The settings that change traces: resuming under different ones is refused."""
    b = cfg.backend
    # new settings enter only when set, so runs made before they existed still resume
    extra = {"repair_history": True} if cfg.rollout.repair_history else {}
    if b.synth_time_budget_s:  # an opt-in wall-clock cap makes synth traces depend on load
        extra["synth_time_budget_s"] = b.synth_time_budget_s
    if b.synth_compact:
        extra["synth_compact"] = True
    return {**extra, "backend": b.name, "model": b.model, "temperature": b.temperature, "top_p": b.top_p, "top_k": b.top_k, "seed": b.seed,
            "max_new_tokens": b.max_new_tokens, "enable_thinking": b.enable_thinking,
            "synth_write_nodes": b.synth_write_nodes, "synth_fix_nodes": b.synth_fix_nodes,
            "max_repairs": cfg.rollout.max_repairs, "program_samples": cfg.rollout.program_samples, "exec_timeout_s": cfg.rollout.exec_timeout_s,
            "memory_mb": cfg.rollout.memory_mb, "split_seed": cfg.split_seed,
            "case_set": _case_set_digest(cases), "n_cases": len(cases)}


_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_flags(cfg: RunConfig) -> None:
    """What a built config cannot check alone (the registry, files, installed models): raises
    ``ConfigError`` naming the field. Changes nothing."""
    b, e = cfg.backend, cfg.experiment
    if cfg.tag is not None and not _TAG.fullmatch(cfg.tag):
        raise UsageError(f"must be letters, digits, '.', '_' or '-' (it names reports/fresh_traces_TAG.jsonl), "
                         f"got {cfg.tag!r}", "tag")
    root = Path(cfg.root)
    above = root
    while not above.exists() and above != above.parent:  # the nearest folder that is there
        above = above.parent
    if above.exists() and not above.is_dir():
        raise UsageError(f"{above} is not a directory", "root")
    if _reports(cfg).exists() and not _reports(cfg).is_dir():
        raise UsageError(f"{_reports(cfg)} is not a directory (a run writes its outputs there)")
    if b.name not in available_backends():
        raise UsageError(f"unknown backend {b.name!r}; choose one of {', '.join(available_backends())}",
                         "backend.name")
    if b.name == "openai" and b.base_url:
        from tracegen.backends.openai_backend import parse_base_urls

        try:
            parse_base_urls(b.base_url)
        except ConfigError as err:
            raise err.within("backend") from None
    if e.lora.base_model is not None:
        policy_model(e.lora.base_model)
    if e.study is not None:
        from controller.study.hypotheses import StudyError, load_study

        try:
            load_study(e.study, known_policies=names(max_repairs=cfg.rollout.max_repairs))
        except StudyError as err:
            raise UsageError(f"`experiment.study` {err}") from None


def policy_model(name: str) -> str:
    """The folder of the LoRA base ``name`` (a packaged name such as smollm2 becomes its folder)."""
    from tracegen.models import ModelNotInstalled, resolve_model

    field_ = "experiment.lora.base_model"
    try:
        path = Path(resolve_model(name))
    except ModelNotInstalled as err:
        raise UsageError(str(err), field_) from None
    if not (path / "config.json").is_file():
        raise UsageError(f"{path} holds no model (no config.json there)", field_)
    try:
        conf = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"{path / 'config.json'}: not a model config ({_why(err)})", field_) from None
    if not isinstance(conf, dict):
        raise UsageError(f"{path / 'config.json'}: not a model config (a JSON {_JSON_KIND.get(type(conf), 'value')}, "
                         "not an object)", field_)
    return str(path)


_JSON_KIND = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def _why(err: Exception) -> str:
    """A file's read or parse error in a few words."""
    if isinstance(err, json.JSONDecodeError):
        return f"not valid JSON: {err.msg} at line {err.lineno}"
    if isinstance(err, UnicodeDecodeError):
        return "not UTF-8 text"
    return getattr(err, "strerror", None) or type(err).__name__


def split_sizes(cfg: RunConfig, families, of=None) -> tuple[int, int]:
    """(n_test, n_dev) for a fresh split, or UsageError: checked before anything is written.
    ``of``: the families of the whole case set, so a split that fails because the selection
    (``limit_total``) or the trace file left fewer families names that as the cause."""
    narrowed = ""
    if of is not None and len(set(of)) > len(set(families)):
        given = [f"`{k}` {getattr(cfg, k)}" for k in SELECTION if getattr(cfg, k) is not None]
        left = f"{len(set(families))} of the {len(set(of))} families"
        narrowed = (f"{' and '.join(given)} leave{'s' * (len(given) == 1)} {left}" if given
                    else f"{trace_path(cfg)} holds cases of {left}")
    try:
        n_test, n_dev = default_split_sizes(len(families))
    except SplitError as err:
        if narrowed:
            raise UsageError(f"{narrowed}; train/dev/test splits need at least 3") from None
        raise UsageError(str(err), "cases") from None
    n_test = cfg.test_families if cfg.test_families is not None else n_test
    n_dev = cfg.dev_families if cfg.dev_families is not None else n_dev
    if n_test < 1:
        raise UsageError(f"must be at least 1, got {n_test}", "test_families")
    if n_test + n_dev >= len(families):
        raise UsageError(f"{n_test} test + {n_dev} dev families leave no training family out of {len(families)}"
                         f" (`test_families`/`dev_families`{'; ' + narrowed if narrowed else ''})", "test_families")
    return n_test, n_dev


def _manifest_splits(cfg: RunConfig, families) -> tuple[dict, dict]:
    """The splits of ``split_manifest``, which must place every family of the run's cases. The
    manifest a resumed or re-analysed run keeps from its reports/ is named as a file, one given
    with ``split_manifest`` by its flag too."""
    kept = Path(cfg.split_manifest) == _reports(cfg) / "split_manifest.json"
    field_ = None if kept else "split_manifest"
    try:
        m = read_split_manifest(cfg.split_manifest)
    except SplitError as err:
        raise UsageError(str(err), field_) from None
    split_families = m["split_families"]
    missing = sorted(set(families) - {f for fs in split_families.values() for f in fs})
    if missing:
        raise UsageError(f"{cfg.split_manifest}: no split for families {', '.join(missing[:5])}"
                         + (" (the split kept from the traced run)" if kept else ""), field_)
    return split_families, {"source": cfg.split_manifest, "method": m["method"], "probe_case_ids": m["probe_case_ids"]}


def _splits(cfg: RunConfig, cases, sandbox_factory, log, synth=None) -> tuple[dict, dict]:
    """(split_families, info): info has ``method``, ``probe_case_ids`` and, with a probe, ``headroom``.

    Default: seed and family names only. ``--headroom-probe``: one probe case per family (seed and
    case ids only) is traced cheaply by the synthesizer, headroom families are read from those
    alone and dealt first, and the probe cases are then left out of every score.
    """
    families = sorted({c.family for c in cases})
    if cfg.split_manifest:
        return _manifest_splits(cfg, families)
    n_test, n_dev = split_sizes(cfg, families)
    info = {"method": "seeded_shuffle", "probe_case_ids": [], "headroom": [], "n_test": n_test, "n_dev": n_dev}
    if cfg.headroom_probe:
        by_family: dict[str, list[str]] = {}
        for c in cases:  # every case, scored or not: even whether an answer exists must not pick probes
            by_family.setdefault(c.family, []).append(c.case_id)
        probe_ids = set(probe_cases(by_family, seed=cfg.split_seed))
        log(f"probing headroom on {len(probe_ids)} probe cases (left out of every score) ...")
        with sandbox_factory() as sb:
            from tracegen.probe import probe_headroom

            info["headroom"] = probe_headroom([c for c in cases if c.case_id in probe_ids], sb, cfg.backend,
                                              cfg.rollout, synth=synth)
        info.update(method="headroom_probe", probe_case_ids=sorted(probe_ids))
    try:
        split_families = make_splits(families, n_test=n_test, n_dev=n_dev, seed=cfg.split_seed,
                                     headroom=info["headroom"])
    except SplitError as err:
        raise UsageError(f"{err} (`dev_families`)", "test_families") from None
    return split_families, info


# ---- traces ---------------------------------------------------------------------------------

def _check_trace_file(cfg: RunConfig, tcfg: dict, log) -> tuple[frozenset[str], list | None]:
    """Read-only checks of an existing trace file and its run config, before anything is written.

    Returns (case ids already traced, when resuming; the validated records, when only reusing).
    """
    path = trace_path(cfg)
    conf = _read_run_config(cfg) if cfg.resume or not cfg.generate_traces else None
    try:
        if not cfg.generate_traces:
            records = read_traces(path, warn=log)
            if not records:
                raise UsageError(f"{path}: holds no trace records; trace the cases with `generate_traces`")
            _check_unique(path, records)
            return frozenset(), records
        if cfg.resume and path.exists():
            if conf is not None and not cfg.force:
                old = conf["trace_config"]
                diffs = [f"{k}: {old.get(k)!r} -> {v!r}" for k, v in tcfg.items() if old.get(k) != v]
                if diffs:
                    raise UsageError(f"{path} was made with other settings ({'; '.join(diffs)}); "
                                     "set `force` to continue it anyway", "resume")
            records = read_traces(path, warn=log)
            _check_unique(path, records)
            return frozenset(r["case_id"] for r in records), None
    except TraceFileError as err:
        raise UsageError(str(err)) from None
    except OSError as err:  # e.g. a folder where the file should be
        raise UsageError(f"{path}: cannot read ({_why(err)})") from None
    return frozenset(), None


def _check_unique(path: Path, records: list) -> None:
    """One record per case: a second one would be counted twice (a resumed run never writes it)."""
    seen: dict[str, int] = {}
    for i, r in enumerate(records):
        if r["case_id"] in seen:
            lines = [n for n, line in enumerate(path.read_bytes().split(b"\n"), 1) if line.strip()]
            raise UsageError(f"{path}: line {lines[i]} repeats case {r['case_id']!r} (first on line "
                             f"{lines[seen[r['case_id']]]})")
        seen[r["case_id"]] = i


def _read_run_config(cfg: RunConfig) -> dict | None:
    """The run_config.json beside the traces, checked (None: there is none, e.g. an older run's
    folder): a JSON object with a ``trace_config`` object, a ``selection`` of positive counts and a
    ``traces_started_utc`` string where they are present; UsageError names the file."""
    path = _run_config_path(cfg)
    if not path.exists():
        return None
    try:
        conf = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"{path}: cannot be read ({_why(err)})") from None
    if not isinstance(conf, dict):
        raise UsageError(f"{path}: top level is a JSON {_JSON_KIND.get(type(conf), 'value')}, expected an object "
                         "with trace_config")
    if not isinstance(conf.get("trace_config"), dict):
        raise UsageError(f"{path}: no trace_config object (the settings the traces were made with)")
    selection = conf.get("selection", {})
    if not isinstance(selection, dict):
        raise UsageError(f"{path}: selection must be an object ({', '.join(SELECTION)}), got {selection!r}")
    for k, v in selection.items():
        if k not in SELECTION:
            raise UsageError(f"{path}: selection has an unknown key {k!r} (known: {', '.join(SELECTION)})")
        if type(v) is not int or v <= 0:
            raise UsageError(f"{path}: selection.{k} must be a positive integer, got {v!r}")
    started = conf.get("traces_started_utc")
    if started is not None and not isinstance(started, str):
        raise UsageError(f"{path}: traces_started_utc must be a UTC time string, got {started!r}")
    return conf


def _start_trace_file(cfg: RunConfig, log) -> None:
    """Drop a torn tail before appending (a fresh run found no trace file: it was moved aside)."""
    path = trace_path(cfg)
    if cfg.resume:
        dropped = repair_torn_tail(path)
        if dropped:
            log(f"{path}: dropped a torn last line ({dropped} bytes) left by an interrupted run")


def _prepared(cfg: RunConfig) -> RunConfig:
    """The config this run works with, a copy (the caller's stays as it was): the LoRA base
    resolved to its folder; the synthesizer's waves sliced (it streams its answers,
    ``Backend.generate_iter``: it gets each round of a wave whole and the rollout checks and counts
    its answers 8 per worker at a time as they finish, so progress advances within a wave without
    the pool waiting at each slice's end); the LoRA bar only on a terminal (a log file would get one
    line per step); a resumed or re-analysed run keeps its split."""
    from tracegen.progress import is_terminal

    changes = {}
    e = cfg.experiment
    if e.lora.base_model is not None or (e.progress and not is_terminal()):
        lora = replace(e.lora, base_model=policy_model(e.lora.base_model)) if e.lora.base_model else e.lora
        changes["experiment"] = replace(e, lora=lora, progress=e.progress and is_terminal())
    if cfg.backend.name == "synth" and not cfg.rollout.request_slice:
        from tracegen.backends.synth import workers

        changes["rollout"] = replace(cfg.rollout, request_slice=8 * workers(cfg.backend))
    manifest = _reports(cfg) / "split_manifest.json"
    if ((cfg.resume or not cfg.generate_traces) and not cfg.split_manifest and manifest.exists()
            and trace_path(cfg).exists()):
        changes["split_manifest"] = str(manifest)
    return replace(cfg, **changes) if changes else cfg


def _open_backend(cfg: RunConfig):
    """Build the backend (loading a model, checking an endpoint) before anything is written."""
    from tracegen.backends import get_backend

    if cfg.backend.name == "hf":
        from tracegen.models import ModelNotInstalled, check_hub_model

        try:  # offline and not cached: fail now, not after the hub client's retries
            check_hub_model(cfg.backend.model)
        except ModelNotInstalled as err:
            raise UsageError(f"`backend.name` hf: {err}") from None
    try:
        backend = get_backend(cfg.backend)
    except ConfigError as err:  # a field the backend cannot work with
        raise err.within("backend") from None
    except (ValueError, OSError, ImportError) as err:
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UsageError(f"`backend.name` {cfg.backend.name}: {detail}") from None
    from tracegen.backends.cache import maybe_cached

    if cfg.backend.name == "synth":  # deterministic: the split probe and the rollout share its work
        from tracegen.probe import Memo

        backend = Memo(backend)
    return maybe_cached(backend, cfg.backend.cache_dir)


def _generate(cfg: RunConfig, backend, cases, split_of, tcfg, done, log) -> dict:
    from sandbox import Sandbox
    from tracegen.rollout import rollout

    from controller.study.provenance import utc_now

    started = _traces_started_utc(cfg) if cfg.resume and done else utc_now()  # kept on --resume
    _start_trace_file(cfg, log)
    atomic_write_json(_run_config_path(cfg), {"trace_config": tcfg, "backend": asdict(cfg.backend),
                                              "rollout": asdict(cfg.rollout), "selection": _selection(cfg),
                                              **({"traces_started_utc": started} if started else {})})
    with Sandbox(workers=cfg.workers) as sb:
        return rollout(cases, split_of, backend, sb, trace_path(cfg), cfg.rollout, done_ids=done)


SELECTION = ("cases_per_family", "limit_total")  # which cases of the set a run traces


def _selection(cfg: RunConfig) -> dict:
    return {k: getattr(cfg, k) for k in SELECTION if getattr(cfg, k) is not None}


def _traced_selection(cfg: RunConfig, log) -> RunConfig:
    """A resumed or re-analysed run that names no selection works on the cases its traces were
    made for: the ``selection`` its run_config.json keeps (a smoke run's ``limit_total``)."""
    if _selection(cfg) or (cfg.generate_traces and not cfg.resume):
        return cfg
    kept = (_read_run_config(cfg) or {}).get("selection") or {}
    if kept:
        log("the traced selection: " + ", ".join(f"{k} {v}" for k, v in kept.items()) + f" ({_run_config_path(cfg).name})")
    return replace(cfg, **kept) if kept else cfg


def _traces_started_utc(cfg: RunConfig) -> str | None:
    """``traces_started_utc`` of the run_config.json beside the traces (None: absent, e.g. older files)."""
    try:
        return (_read_run_config(cfg) or {}).get("traces_started_utc")
    except UsageError:  # checked before the run began; this run may have rewritten it since
        return None


# ---- the run --------------------------------------------------------------------------------

def run(cfg: RunConfig, log=print) -> dict:
    t0 = time.monotonic()
    check_flags(cfg)
    cfg = _prepared(cfg)
    try:
        _, cases_dir = resolve_case_set(cfg.cases)
        all_cases = load_cases(cases_dir)
    except CaseError as err:
        raise UsageError(str(err), "cases") from None
    path = trace_path(cfg)
    if not cfg.generate_traces and not path.exists():
        raise UsageError(f"{path}: no traces yet; set `generate_traces`")
    cfg = _traced_selection(cfg, log)
    cases = select_cases(all_cases, cfg.cases_per_family, cfg.limit_total)
    tcfg = trace_config(cfg, cases)

    manifest = _reports(cfg) / "split_manifest.json"
    # the LoRA worker starts now, importing while the trace file is read and checked, or while
    # tracing runs (then niced: tracing keeps the cores busy, the imports take their idle moments)
    worker = _start_lora_worker(cfg, nice=TRACING_NICE if cfg.generate_traces else 0)
    backend = None
    try:
        done, records = _check_trace_file(cfg, tcfg, log)
        if records is not None:
            known = {c.case_id for c in all_cases}
            if not any(r["case_id"] in known for r in records):
                raise UsageError(f"none of the {len(records)} records of {path} is a case of {cfg.cases} (e.g. "
                                 f"{records[0]['case_id']!r}): give the case set the traces were made from", "cases")
        if records is not None and not _selection(cfg):  # an older run's folder: the cases it traced
            traced = {r["case_id"] for r in records}
            cases = [c for c in cases if c.case_id in traced]
        if cfg.split_manifest:
            _manifest_splits(cfg, {c.family for c in cases})
        else:
            split_sizes(cfg, {c.family for c in cases}, of={c.family for c in all_cases})
        backend = _open_backend(cfg) if cfg.generate_traces else None
        replays = getattr(backend, "replays", None)
        if replays is not None:  # the replay backend: every case to trace needs its stored direct answer
            untraced = [c.case_id for c in cases if c.case_id not in done and not replays(c.case_id)]
            if untraced:
                raise UsageError(f"{cfg.backend.replay_path} holds no record of {len(untraced)} of the "
                                 f"{len(cases)} cases to trace (e.g. {untraced[0]!r}); trace the cases it holds "
                                 "(`limit_total` or `cases_per_family` as it was made) or another case set",
                                 "backend.replay_path")
        set_previous_run_aside(cfg, log)  # every check passed: from here on this run writes
        return _run_checked(cfg, cases, tcfg, done, records, backend, manifest, t0, log, worker)
    except PartialGeneration as err:
        # a request the endpoint refuses for good (e.g. HTTP 400): the finished generations are
        # cached, so fixing the cause and rerunning with --resume pays only for the rest
        raise UsageError(f"`backend.name` {cfg.backend.name}: {str(err).splitlines()[0]}; fix it and rerun with `resume`") from None
    except ReplayMissError as err:  # a round the replayed run never generated (a changed sandbox or max_repairs)
        raise UsageError(f"{err}; the records before it are kept", "backend.replay_path") from None
    finally:
        if backend is not None:
            backend.close()
        if worker is not None:
            worker.close()


def analyze(records, experiment: ExperimentConfig | None = None, log=print) -> tuple[dict, dict]:
    """The study alone, on trace records already in memory (each with its ``split``: train, dev,
    test or unassigned): every controller trained, simulated and compared as a run does after
    tracing. Returns ``(summary, outcomes)``: the summary's study keys (``policy_results``,
    ``paired_tests``, ``headroom``, ...; a run adds ``config``, ``versions`` and ``timing``) and,
    per policy, one outcome per case. Writes nothing but LoRA adapters under ``adapters_dir``."""
    e = experiment or ExperimentConfig()
    if e.lora.base_model is not None:
        e = replace(e, lora=replace(e.lora, base_model=policy_model(e.lora.base_model)))
    if e.study is not None:
        check_flags(RunConfig(experiment=e))
    return run_experiment(records, e, log=log)


def _start_lora_worker(cfg: RunConfig, nice: int = 0):
    """The side process that trains the LoRA policies (``controller.lora_worker``), or None."""
    from controller.study.experiment import needs_lora_worker

    if not needs_lora_worker(cfg.experiment):
        return None
    from controller.learn.lora_worker import LoraWorker

    return LoraWorker(while_waiting=_import_plotting, nice=nice)


def _warm_imports(nice: int):
    """Import ``WARM_MODULES`` and the plotting modules in a thread at ``nice`` more niceness
    (Linux keeps a niceness per thread), and return the started thread."""
    import importlib
    import threading

    def run() -> None:
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice)
        except (AttributeError, OSError):  # no per-thread niceness here: import at full priority
            pass
        for name in WARM_MODULES:
            try:
                importlib.import_module(name)
            except ImportError:  # the step that needs it says so itself
                pass
        _import_plotting()

    thread = threading.Thread(target=run, name="warm-imports")
    thread.start()
    return thread


def _import_plotting() -> None:
    """What writing the figures imports first (~1 s): done while the LoRA worker trains."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401


def _run_checked(cfg: RunConfig, cases, tcfg, done, records, backend, manifest, t0, log, worker=None) -> dict:
    """Everything after the read-only checks: splits, traces, controllers, outputs. ``worker``: a
    started LoRA worker (closed by the caller), else one is started after tracing."""
    from sandbox import Sandbox

    path = trace_path(cfg)
    synth = backend if cfg.backend.name == "synth" else None  # the probe shares its first attempts
    split_families, split_info = _splits(cfg, cases, lambda: Sandbox(workers=cfg.workers), log, synth=synth)
    split_of_family = {f: s for s, fs in split_families.items() for f in fs}
    probes = frozenset(split_info["probe_case_ids"])  # traced, but in no split: no score counts them
    split_of = {c.case_id: "unassigned" if c.case_id in probes else split_of_family.get(c.family, "unassigned")
                for c in cases}
    counts = {s: sum(1 for c in cases if split_of[c.case_id] == s) for s in ("train", "dev", "test")}
    atomic_write_json(manifest, split_manifest(
        split_families, seed=cfg.split_seed, sizes={s: len(f) for s, f in split_families.items()},
        headroom=split_info.get("headroom", []), case_counts=counts, method=split_info["method"],
        probe_case_ids=sorted(probes)))
    timing = {}
    if cfg.generate_traces:
        log(f"tracing {len(cases)} cases ({cfg.backend.name}) -> {path}")
        t = time.monotonic()
        warm = _warm_imports(TRACING_NICE)
        try:
            timing["trace_stats"] = _generate(cfg, backend, cases, split_of, tcfg, done, log)
        finally:
            warm.join()  # seconds at most; the controllers would wait for the same imports
        timing["traces_s"] = round(time.monotonic() - t, 2)
        gen = getattr(backend, "stats", dict)()  # cache hits, per-endpoint throughput and errors
        if gen:
            timing["generation"] = gen

    own_worker = worker is None and records is None  # after tracing: start it before reading the traces back
    if own_worker:
        worker = _start_lora_worker(cfg)
    try:
        if records is None:
            records = read_traces(path, warn=log)
        for r in records:  # the split in force is the current manifest's; probe cases stay out
            r["split"] = "unassigned" if r["case_id"] in probes else split_of_family.get(r["family"], "unassigned")
        log(f"training and simulating controllers on {len(records)} records ...")
        result = run_experiment(records, cfg.experiment, log=log, lora_worker=worker)
        summary = result.summary
    finally:
        if own_worker and worker is not None:
            worker.close()
    summary["split_method"] = {"method": split_info["method"], "probe_case_ids": sorted(probes)}
    if summary.get("study"):  # pre-registered only if the study file was committed before the traces started
        from controller.study.provenance import registration

        started = _traces_started_utc(cfg)
        summary["study"].update(traces_started_utc=started or "unknown",
                                **registration(summary["study"].get("study_file_git"), started))
    return write_outputs(cfg, result, records, timing, t0, log)
