"""One run, end to end: cases -> splits -> traces -> controllers -> reports.

``run(cfg)`` is what the CLI calls. Everything that can be checked before spending compute
(flags, case files, split requests, an existing trace file, a resumed run's configuration) is
checked first (``controller.checks``); a problem raises ``UsageError`` with one line and nothing
is written. What differs between backends the run asks of the backend's class (its capabilities,
``tracegen.backends.base.Backend``), never by its name.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from cases import CaseError, SplitError, load_case_set, make_splits, probe_cases, split_manifest
from tracegen.backends import PartialGeneration, Unanswerable, backend_class
from tracegen.errors import ConfigError
from tracegen.records import (TraceFileError, assign_splits, case_of_record, read_traces, repair_torn_tail,
                              upgrade_record)

from controller.args import config_text
from controller.checks import (UsageError, check_flags, check_study, check_trace_file, manifest_splits, policy_model,
                               read_run_config, split_sizes, traced_cases, traces_started_utc)
from controller.config import RunConfig, select_cases, selection, trace_config
from controller.env.traceenv import max_repairs
from controller.report.outputs import atomic_write_json, atomic_write_text
from controller.run_folder import (reports_dir, run_config_path, run_settings, set_previous_run_aside, trace_path,
                                   traced_runtime, write_outputs)
from controller.study.experiment import ExperimentConfig, run_experiment
from controller.warm import TRACING_NICE, import_plotting, warm_imports


def run(cfg: RunConfig, log=print) -> dict:
    t0 = time.monotonic()
    given = cfg  # what reports/config.toml holds: fed back with --config, it makes this run again
    check_flags(cfg)
    cfg = _prepared(cfg.resolved())
    path = trace_path(cfg)
    if not cfg.generate_traces and not path.exists():
        raise UsageError(f"{path}: no traces yet; set `generate_traces`")
    cfg = _traced_selection(cfg, log)
    cfg = _replayed_runtime(cfg, log)
    # a run that traces reads its case set; a re-analysis reads no case file: each record carries
    # its task and hidden answer (``records.case_of_record``), so imported runs need none either
    all_cases = _case_set(cfg) if cfg.generate_traces else None
    cases = select_cases(all_cases, cfg.cases_per_family, cfg.limit_total) if all_cases is not None else None
    tcfg = trace_config(cfg, cases) if cases is not None else None

    # the LoRA worker starts now, importing while the trace file is read and checked, or while
    # tracing runs (then niced: tracing keeps the cores busy, the imports take their idle moments)
    worker = _start_lora_worker(cfg, nice=TRACING_NICE if cfg.generate_traces else 0)
    backend = None
    try:
        done, records = check_trace_file(cfg, tcfg, log)
        if records is not None:
            all_cases = [case_of_record(r) for r in records]
            cases = traced_cases(cfg, select_cases(all_cases, cfg.cases_per_family, cfg.limit_total))
        if records is not None:  # the repair budget the traces were made with, not this config's
            check_study(cfg.experiment, max_repairs(records))
        split = None
        if cfg.split_manifest:
            split = manifest_splits(cfg, {c.family for c in cases})
            if records is not None:  # checked before anything is written
                _in_force(cfg, records, *split)
        else:
            split_sizes(cfg, {c.family for c in cases}, of={c.family for c in all_cases})
        if cfg.generate_traces:
            warn_undecidable(cfg.experiment, cases, log)
            backend = _open_backend(cfg, [c.case_id for c in cases if c.case_id not in done], log)
        set_previous_run_aside(cfg, log)  # every check passed: from here on this run writes
        atomic_write_text(reports_dir(cfg) / "config.toml", config_text(given))
        return _run_checked(cfg, cases, tcfg, done, records, backend, t0, log, worker,
                            assigned=records is not None and split is not None)
    except PartialGeneration as err:
        # a request the endpoint refuses for good (e.g. HTTP 400): the finished generations are
        # cached, so fixing the cause and rerunning with --resume pays only for the rest
        raise UsageError(f"`backend.name` {cfg.backend.name}: {str(err).splitlines()[0]}; fix it and rerun with `resume`") from None
    except Unanswerable as err:  # e.g. a round the replayed run never generated (a changed sandbox or max_repairs)
        raise UsageError(f"{err}; the records before it are kept", err.field and f"backend.{err.field}") from None
    finally:
        if backend is not None:
            backend.close()
        if worker is not None:
            worker.close()


def _case_set(cfg: RunConfig):
    """The cases of ``cfg.cases`` (a named set, a folder, or a trace file: the cases its records
    carry); ``UsageError`` naming it otherwise."""
    if str(cfg.cases or "").endswith((".jsonl", ".jsonl.gz")):
        return _recorded_cases(Path(cfg.cases))
    try:
        return load_case_set(cfg.cases)
    except CaseError as err:
        raise UsageError(str(err), "cases") from None


def _recorded_cases(path: Path) -> list:
    """The cases a trace file's records carry (each its task and hidden answer), sorted by case id:
    what a replay of an imported run, which has no case file, traces again."""
    if not path.is_file():
        raise UsageError(f"{path}: no such trace file", "cases")
    try:
        records = read_traces(path, warn=lambda _: None)
        cases = {r["case_id"]: case_of_record(r) for r in records}
    except (TraceFileError, OSError, KeyError, TypeError, ValueError) as err:
        raise UsageError(f"{path}: not a trace file whose records carry their tasks ({err})", "cases") from None
    if not cases:
        raise UsageError(f"{path}: holds no trace records", "cases")
    return [cases[k] for k in sorted(cases)]


def warn_undecidable(experiment: ExperimentConfig, cases, log) -> list[str]:
    """Before any trace: the study file's hypotheses that cannot pass at this many scored cases
    and families (``controller.study.decidable.registration_warnings``), one line each."""
    if experiment.study is None:
        return []
    from controller.study.decidable import registration_warnings
    from controller.study.hypotheses import load_study

    scored = [c for c in cases if c.scored]
    lines = [f"warning: `experiment.study` {experiment.study}: {w}" for w in registration_warnings(
        load_study(experiment.study), len(scored), len({c.family for c in scored}))]
    for line in lines:
        log(line)
    return lines


def analyze(records, experiment: ExperimentConfig | None = None, log=print) -> tuple[dict, dict]:
    """The study alone, on trace records already in memory (each with its ``split``: train, dev,
    test or unassigned): every controller trained, simulated and compared as a run does after
    tracing. Returns ``(summary, outcomes)``: the summary's study keys (``policy_results``,
    ``paired_tests``, ``headroom``, ...; a run adds ``config``, ``versions`` and ``timing``) and,
    per policy, one outcome per case. Writes nothing but LoRA adapters under ``adapters_dir``."""
    e = experiment or ExperimentConfig()
    if e.lora.base_model is not None:
        e = replace(e, lora=replace(e.lora, base_model=policy_model(e.lora.base_model)))
    records = [upgrade_record(r) for r in records]  # records from Python: upgraded here, as read_traces does
    check_study(e, max_repairs(records))
    return run_experiment(records, e, log=log)


# ---- before the run writes ------------------------------------------------------------------

def _prepared(cfg: RunConfig) -> RunConfig:
    """The config this run works with, a copy (the caller's stays as it was): the LoRA base
    resolved to its folder; the rollout's requests per call as the backend asks
    (``Backend.request_slice``) when the config leaves it open; the LoRA bar only on a terminal (a
    log file would get one line per step); a resumed or re-analysed run keeps its split."""
    from tracegen.progress import is_terminal

    changes = {}
    e = cfg.experiment
    if e.lora.base_model is not None or (e.progress and not is_terminal()):
        lora = replace(e.lora, base_model=policy_model(e.lora.base_model)) if e.lora.base_model else e.lora
        changes["experiment"] = replace(e, lora=lora, progress=e.progress and is_terminal())
    if not cfg.rollout.request_slice:
        n = backend_class(cfg.backend.name).request_slice(cfg.backend)
        if n:
            changes["rollout"] = replace(cfg.rollout, request_slice=n)
    manifest = reports_dir(cfg) / "split_manifest.json"
    if ((cfg.resume or not cfg.generate_traces) and not cfg.split_manifest and manifest.exists()
            and trace_path(cfg).exists()):
        changes["split_manifest"] = str(manifest)
    return replace(cfg, **changes) if changes else cfg


def _traced_selection(cfg: RunConfig, log) -> RunConfig:
    """A resumed or re-analysed run that names no selection works on the cases its traces were
    made for: the ``selection`` its run_config.json keeps (a smoke run's ``limit_total``)."""
    if selection(cfg) or (cfg.generate_traces and not cfg.resume):
        return cfg
    kept = (read_run_config(cfg) or {}).get("selection") or {}
    if kept:
        log("the traced selection: " + ", ".join(f"{k} {v}" for k, v in kept.items()) + f" ({run_config_path(cfg).name})")
    return replace(cfg, **kept) if kept else cfg


def _replayed_runtime(cfg: RunConfig, log) -> RunConfig:
    """A replay that names no sandbox runtime runs its programs with the one the replayed run
    recorded (its run_config.json beside the trace file): an imported run's numpy programs would
    otherwise all fail, and the replay would not reproduce it."""
    if cfg.backend.name != "replay" or not cfg.generate_traces or cfg.rollout.sandbox_runtime is not None \
            or not cfg.backend.replay_path:
        return cfg
    import json

    runtime = traced_runtime(Path(cfg.backend.replay_path).parent / run_config_path(cfg).name)
    if not runtime:  # no record of one: the standard library only, as any run
        return cfg
    log(f"replay: programs run with the sandbox runtime the replayed run recorded ({json.dumps(runtime)})")
    return replace(cfg, rollout=replace(cfg.rollout, sandbox_runtime=runtime))


def _open_backend(cfg: RunConfig, to_trace=(), log=print):
    """Build the backend (loading a model, checking an endpoint) and check that it can trace the
    cases ``to_trace`` before anything is written. Loading a model is named, with its time: it can
    take minutes before the first token."""
    from tracegen.backends import get_backend
    from tracegen.backends.cache import maybe_cached

    kind = backend_class(cfg.backend.name)
    try:
        kind.preflight(cfg.backend)
        t = time.monotonic()
        if kind.loads_model:
            log(f"loading model {cfg.backend.model} ({cfg.backend.name} backend) ...")
        backend = get_backend(cfg.backend)
        if kind.loads_model:
            log(f"model loaded in {time.monotonic() - t:.1f}s")
    except ConfigError as err:  # a field the backend cannot work with
        raise err.within("backend") from None
    except (ValueError, OSError, ImportError) as err:
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UsageError(f"`backend.name` {cfg.backend.name}: {detail}") from None
    try:
        backend.check_cases(list(to_trace))
    except ConfigError as err:
        backend.close()
        raise UsageError(f"{err.problem}; trace the cases it holds (`cases` {cfg.backend.replay_path}, or "
                         "`limit_total` or `cases_per_family` as it was made)", err.field and f"backend.{err.field}") from None
    if kind.shares_probe:  # the split probe and the rollout share its work
        from tracegen.probe import Memo

        backend = Memo(backend)
    return maybe_cached(backend, cfg.backend.cache_dir)


def _start_lora_worker(cfg: RunConfig, nice: int = 0):
    """The side process that trains the LoRA policies (``controller.lora_worker``), or None."""
    from controller.study.experiment import needs_lora_worker

    if not needs_lora_worker(cfg.experiment):
        return None
    from controller.learn.lora_worker import LoraWorker

    return LoraWorker(while_waiting=import_plotting, nice=nice)


# ---- the run, once every check passed ---------------------------------------------------------

def _splits(cfg: RunConfig, cases, sandbox_factory, log, synth=None) -> tuple[dict, dict]:
    """(split_families, info): info has ``method``, ``probe_case_ids`` and, with a probe, ``headroom``.

    Default: seed and family names only. ``--headroom-probe``: one probe case per family (seed and
    case ids only) is traced cheaply by the synthesizer (``synth``: the run's own backend, when it
    shares the probe), headroom families are read from those alone and dealt first, and the probe
    cases are then left out of every score.
    """
    families = sorted({c.family for c in cases})
    if cfg.split_manifest:
        return manifest_splits(cfg, families)
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


def sandbox_runtime(cfg: RunConfig):
    """The ``sandbox.Runtime`` the run's programs run with (``rollout.sandbox_runtime``; none: the
    standard library only)."""
    from sandbox import Runtime

    given = cfg.rollout.sandbox_runtime
    return Runtime.from_json(given) if given is not None else Runtime()


def generate(cfg: RunConfig, backend, cases, split_of, tcfg, done, log) -> dict:
    """Trace ``cases`` (all but ``done``) with ``backend`` into the run's trace file, after writing
    its run_config.json; the rollout's counts. A run and ``live-tool-dagger import`` trace here."""
    from sandbox import Sandbox
    from tracegen.rollout import rollout

    from controller.study.provenance import utc_now

    started = traces_started_utc(cfg) if cfg.resume and done else utc_now()  # kept on --resume
    if cfg.resume:  # drop a torn tail before appending (a fresh run's trace file was moved aside)
        dropped = repair_torn_tail(trace_path(cfg))
        if dropped:
            log(f"{trace_path(cfg)}: dropped a torn last line ({dropped} bytes) left by an interrupted run")
    # the settings as config.toml spells them (``run_settings``), beside what the resume check compares
    atomic_write_json(run_config_path(cfg), {"config": run_settings(cfg), "trace_config": tcfg, "selection": selection(cfg),
                                             **({"traces_started_utc": started} if started else {})})
    with Sandbox(workers=cfg.workers, runtime=sandbox_runtime(cfg)) as sb:
        return rollout(cases, split_of, backend, sb, trace_path(cfg), cfg.rollout, done_ids=done)


def _in_force(cfg: RunConfig, records, split_families, split_info) -> None:
    """The records' split set to the run's manifest (``assign_splits``): a record traced in another
    split is a ``UsageError`` naming the trace file, unless the run re-splits on purpose (a
    ``split_manifest`` other than the one kept beside the traces)."""
    kept = reports_dir(cfg) / "split_manifest.json"
    resplit = bool(cfg.split_manifest) and Path(cfg.split_manifest).resolve() != kept.resolve()
    try:
        assign_splits(records, split_families, split_info["probe_case_ids"], trace_file=trace_path(cfg),
                      manifest=split_info.get("source") or kept,
                      check=not resplit)
    except TraceFileError as err:
        raise UsageError(str(err)) from None


def _run_checked(cfg: RunConfig, cases, tcfg, done, records, backend, t0, log, worker=None,
                 assigned: bool = False) -> dict:
    """Everything after the read-only checks: splits, traces, controllers, outputs. ``worker``: a
    started LoRA worker (closed by the caller), else one is started after tracing. ``assigned``:
    ``records`` hold the split in force already (checked before anything was written)."""
    from sandbox import Sandbox

    path = trace_path(cfg)
    shared = backend if backend is not None and backend_class(cfg.backend.name).shares_probe else None
    split_families, split_info = _splits(cfg, cases, lambda: Sandbox(workers=cfg.workers, runtime=sandbox_runtime(cfg)), log,
                                          synth=shared)
    split_of_family = {f: s for s, fs in split_families.items() for f in fs}
    probes = frozenset(split_info["probe_case_ids"])  # traced, but in no split: no score counts them
    split_of = {c.case_id: "unassigned" if c.case_id in probes else split_of_family.get(c.family, "unassigned")
                for c in cases}
    counts = {s: sum(1 for c in cases if split_of[c.case_id] == s) for s in ("train", "dev", "test")}
    atomic_write_json(reports_dir(cfg) / "split_manifest.json", split_manifest(
        split_families, seed=cfg.split_seed, sizes={s: len(f) for s, f in split_families.items()},
        headroom=split_info.get("headroom", []), case_counts=counts, method=split_info["method"],
        probe_case_ids=sorted(probes)))
    timing = {}
    if cfg.generate_traces:
        log(f"tracing {len(cases)} cases ({cfg.backend.name}) -> {path}")
        t = time.monotonic()
        warm = warm_imports(TRACING_NICE)
        try:
            timing["trace_stats"] = generate(cfg, backend, cases, split_of, tcfg, done, log)
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
        if not assigned:  # the split in force is the manifest's; probe cases stay out
            _in_force(cfg, records, split_families, split_info)
        log(f"training and simulating controllers on {len(records)} records ...")
        result = run_experiment(records, cfg.experiment, log=log, lora_worker=worker)
        summary = result.summary
    finally:
        if own_worker and worker is not None:
            worker.close()
    summary["split_method"] = {"method": split_info["method"], "probe_case_ids": sorted(probes)}
    from tracegen.backends.logprobs import unavailable_in

    missing = unavailable_in(records)
    if missing:  # e.g. a server that ignores the logprobs field: said in the report and at the end
        summary["logprobs_unavailable"] = missing
    if summary.get("study"):  # pre-registered only if the study file was committed before the traces started
        from controller.study.deviations import settle_rerun
        from controller.study.provenance import registration

        started = traces_started_utc(cfg)
        summary["study"].update(traces_started_utc=started or "unknown",
                                **registration(summary["study"].get("study_file_git"), started))
        settle_rerun(summary)
    if summary.get("deviations"):  # the traced model and where it departs from its recipe
        from dataclasses import asdict

        from controller.study.coder import coder_provenance

        coder = coder_provenance(asdict(cfg.backend), cfg.experiment.model_card)
        if coder:
            summary["deviations"]["coder"] = coder
    return write_outputs(cfg, result, records, timing, t0, log)
