"""The read-only checks a run makes before it writes anything: the flags no config checks alone,
the split it is asked for, an existing trace file and the ``run_config.json`` beside it.

A problem raises ``UsageError`` with one line naming the field (shown as its flag on the command
line) or the file. ``cfg`` is a ``controller.config.RunConfig``; the files are the ones
``controller.run_folder`` names.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from cases import SplitError, default_split_sizes, read_split_manifest
from tracegen.errors import ConfigError
from tracegen.records import TraceFileError, read_traces

from controller.config import SELECTION, backend_kind
from controller.env.registry import names
from controller.run_folder import reports_dir, run_config_path, trace_path


class UsageError(ConfigError):
    """Bad input found by a run (a case file, a trace file, a split request): one line naming the
    field (``field``, shown as its flag on the command line) or the file; the CLI exits with 2."""


_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_flags(cfg) -> None:
    """What a built config cannot check alone (the registry, files, installed models): raises
    ``ConfigError`` naming the field. Changes nothing."""
    b, e = cfg.backend, cfg.experiment
    if cfg.tag is not None and not _TAG.fullmatch(cfg.tag):
        raise UsageError(f"must be letters, digits, '.', '_' or '-' (it names reports/fresh_traces_TAG.jsonl), "
                         f"got {cfg.tag!r}", "tag")
    above = Path(cfg.root)
    while not above.exists() and above != above.parent:  # the nearest folder that is there
        above = above.parent
    if above.exists() and not above.is_dir():
        raise UsageError(f"{above} is not a directory", "root")
    if reports_dir(cfg).exists() and not reports_dir(cfg).is_dir():
        raise UsageError(f"{reports_dir(cfg)} is not a directory (a run writes its outputs there)")
    kind = backend_kind(cfg)
    if kind is None:
        from tracegen.backends import available_backends

        raise UsageError(f"unknown backend {b.name!r}; choose one of {', '.join(available_backends())}",
                         "backend.name")
    try:
        kind.check_config(b)
    except ConfigError as err:
        raise err.within("backend") from None
    if e.lora.base_model is not None:
        policy_model(e.lora.base_model)
    if cfg.generate_traces:  # a run that reuses traces checks its study against their budget (``check_study``)
        check_study(e, cfg.rollout.max_repairs)


def check_study(experiment, max_repairs: int) -> None:
    """The study file of ``experiment`` (an ``ExperimentConfig``), if any: readable, and naming
    only policies of the registry, the repair budgets ``repair_at_most_<r>`` those of
    ``max_repairs``, the traces' budget (the max over their records; for a run that traces, the
    budget it traces with). Raises ``UsageError`` naming ``experiment.study``."""
    if experiment.study is None:
        return
    from controller.study.hypotheses import StudyError, load_study

    try:
        load_study(experiment.study, known_policies=names(max_repairs=max_repairs))
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


# ---- the split ------------------------------------------------------------------------------

def split_sizes(cfg, families, of=None) -> tuple[int, int]:
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


def manifest_splits(cfg, families) -> tuple[dict, dict]:
    """The splits of ``split_manifest``, which must place every family of the run's cases. The
    manifest a resumed or re-analysed run keeps from its reports/ is named as a file, one given
    with ``split_manifest`` by its flag too."""
    kept = Path(cfg.split_manifest) == reports_dir(cfg) / "split_manifest.json"
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


# ---- the trace file and its run_config.json ---------------------------------------------------

def check_trace_file(cfg, tcfg: dict, log) -> tuple[frozenset[str], list | None]:
    """Read-only checks of an existing trace file and its run config, before anything is written.

    Returns (case ids already traced, when resuming; the validated records, when only reusing).
    """
    path = trace_path(cfg)
    conf = read_run_config(cfg) if cfg.resume or not cfg.generate_traces else None
    try:
        if not cfg.generate_traces:
            records = read_traces(path, warn=log)
            if not records:
                raise UsageError(f"{path}: holds no trace records; trace the cases with `generate_traces`")
            _check_unique(path, records)
            return frozenset(), records
        if cfg.resume and path.exists():
            if conf is not None:
                _check_resumed_settings(cfg, path, conf["trace_config"], tcfg, log)
            records = read_traces(path, warn=log)
            _check_unique(path, records)
            return frozenset(r["case_id"] for r in records), None
    except TraceFileError as err:
        raise UsageError(str(err)) from None
    except OSError as err:  # e.g. a folder where the file should be
        raise UsageError(f"{path}: cannot read ({_why(err)})") from None
    return frozenset(), None


def traced_cases(cfg, cases: list) -> list:
    """The cases an analysis covers (taken from the records): all the run selected. An interrupted
    run's file (fewer traced than the ``n_cases`` its run_config.json says were selected) is refused
    unless ``allow_partial``, then its traced cases are analysed; an analysis under another selection
    than the run's, or an older run's folder that keeps no selection, covers what is traced."""
    conf = read_run_config(cfg) or {}
    selected = (conf.get("trace_config") or {}).get("n_cases")
    same = "selection" in conf and conf["selection"] == {k: getattr(cfg, k) for k in SELECTION
                                                         if getattr(cfg, k) is not None}
    if same and isinstance(selected, int) and len(cases) < selected and not cfg.allow_partial:
        raise UsageError(f"{trace_path(cfg)}: {len(cases)} of the {selected} selected cases are traced (an "
                         "interrupted run); finish it with `generate_traces` `resume`, or set `allow_partial` "
                         "to analyse the traced ones")
    return cases


def _check_resumed_settings(cfg, path: Path, old: dict, tcfg: dict, log) -> None:
    """Refuse to continue traces made under other trace-changing settings (unless ``force``).
    The prompt templates' version (``prompts``) is one of them; a run made before it was recorded
    has none, so its prompt version is unknown: it resumes, with a warning."""
    if "prompts" in tcfg and "prompts" not in old:
        log(f"warning: {path}: prompt version unknown (made before prompt versions were recorded); its new "
            f"records are made with today's prompts {tcfg['prompts']}")
    diffs = [f"{k}: {old.get(k)!r} -> {v!r}" for k, v in tcfg.items()
             if old.get(k) != v and not (k == "prompts" and k not in old)]
    if diffs and not cfg.force:
        raise UsageError(f"{path} was made with other settings ({'; '.join(diffs)}); "
                         "set `force` to continue it anyway", "resume")
    if diffs and "prompts" in old and old["prompts"] != tcfg.get("prompts"):
        log(f"warning: {path}: continuing traces made with prompt version {old['prompts']} under today's "
            f"prompts {tcfg.get('prompts')} (forced): the file holds both")


def _check_unique(path: Path, records: list) -> None:
    """One record per case: a second one would be counted twice (a resumed run never writes it)."""
    seen: dict[str, int] = {}
    for i, r in enumerate(records):
        if r["case_id"] in seen:
            lines = [n for n, line in enumerate(path.read_bytes().split(b"\n"), 1) if line.strip()]
            raise UsageError(f"{path}: line {lines[i]} repeats case {r['case_id']!r} (first on line "
                             f"{lines[seen[r['case_id']]]})")
        seen[r["case_id"]] = i


def read_run_config(cfg) -> dict | None:
    """The run_config.json beside the traces, checked (None: there is none, e.g. an older run's
    folder): a JSON object with a ``trace_config`` object, a ``selection`` of positive counts and a
    ``traces_started_utc`` string where they are present; UsageError names the file."""
    path = run_config_path(cfg)
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


def traces_started_utc(cfg) -> str | None:
    """``traces_started_utc`` of the run_config.json beside the traces (None: absent, e.g. older files)."""
    try:
        return (read_run_config(cfg) or {}).get("traces_started_utc")
    except UsageError:  # checked before the run began; this run may have rewritten it since
        return None
