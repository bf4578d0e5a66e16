"""A run's folder: where its files live (``ROOT/reports``), setting the previous run's outputs
aside before a run writes, and writing a finished run's outputs (summary, report, figures,
predictions, viewer, SFT export). ``cfg`` is a ``controller.config.RunConfig`` as a run resolved it."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from cases import resolve_case_set
from tracegen.conversations import prompt_version_note

from controller.args import config_dict
from controller.report.outputs import atomic_write_json, versions, write_cv_predictions, write_predictions


# ---- paths ----------------------------------------------------------------------------------

def reports_dir(cfg) -> Path:
    return Path(cfg.root) / "reports"


def trace_path(cfg) -> Path:
    return reports_dir(cfg) / (f"fresh_traces_{cfg.tag}.jsonl" if cfg.tag else "fresh_traces.jsonl")


def run_config_path(cfg) -> Path:
    return reports_dir(cfg) / (f"run_config_{cfg.tag}.json" if cfg.tag else "run_config.json")


def run_settings(cfg) -> dict:
    """The run's settings as ``run_config.json`` and the summary's ``config`` hold them: its
    ``reports/config.toml`` read back (every field by its path, what ``--config`` takes), and
    ``resolved``: each field the run worked with otherwise (a folder made absolute, the backend's
    request slice), by its dotted path. ``cfg``: the config the run resolved."""
    import tomllib

    given = tomllib.loads((reports_dir(cfg) / "config.toml").read_text(encoding="utf-8"))
    was, ran = _flat(given), _flat(config_dict(cfg))
    resolved = {p: ran.get(p) for p in sorted(set(was) | set(ran)) if was.get(p) != ran.get(p)}
    return {**given, **({"resolved": resolved} if resolved else {})}


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


# ---- the reports folder: one run's outputs, never a mix of two ---------------------------------

KEEP_ALWAYS = ("README.md", "cache")  # the folder's tracked note; content-keyed caches (generations, tiny base)


def _run_inputs(name: str) -> bool:
    """What a reporting-only or resumed run reads back: trace files, their run configs, the split."""
    return ((name.startswith("fresh_traces") and name.endswith(".jsonl"))
            or (name.startswith("run_config") and name.endswith(".json")) or name == "split_manifest.json")


def set_previous_run_aside(cfg, log) -> Path | None:
    """Move the previous run's outputs to ``reports.<UTC time>/`` beside ``reports/``, so what
    this run writes is never mixed with what an earlier run wrote. Nothing is deleted.

    A fresh ``--generate-traces`` run moves everything (but the two ``KEEP_ALWAYS`` entries). A
    resumed or reporting-only run reads the trace file, its run config and the split manifest,
    so those stay (a copy goes aside too, so the folder aside is a whole run) and every derived
    output (report, summary, figures, predictions, viewer, adapters, sft) moves.
    """
    reports = reports_dir(cfg)
    if not reports.is_dir():
        return None
    keep_inputs = cfg.resume or not cfg.generate_traces
    entries = sorted(p for p in reports.iterdir() if p.name not in KEEP_ALWAYS)
    moving = [p for p in entries if not (keep_inputs and _run_inputs(p.name))]
    if not moving:
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside, n = reports.with_name(f"reports.{stamp}"), 1
    while aside.exists():
        aside, n = reports.with_name(f"reports.{stamp}-{n}"), n + 1
    aside.mkdir()
    for p in entries:
        if p in moving:
            os.replace(p, aside / p.name)
        elif p.is_file():
            _keep_a_copy(p, aside / p.name, linked=not cfg.generate_traces)
    log(f"moved the previous run's outputs to {aside}" + (" (traces, run config and split kept there too)" if keep_inputs else ""))
    return aside


def _keep_a_copy(src: Path, dst: Path, linked: bool) -> None:
    """A re-analysis only reads its inputs (and rewrites the small ones by atomic replace), so the
    folder aside gets hard links: a whole run at no extra disk. A resumed run appends to the trace
    file in place, so it gets a real copy (as does a file system without hard links)."""
    if linked:
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)


# ---- a finished run's outputs ---------------------------------------------------------------

def case_set_name(cases: str) -> str:
    """The summary's ``case_set`` of a ``cases`` value: a set's name, ``dir:<folder>``, or as it is
    (``import:<file>``, a folder no longer there: a re-analysis reads no case file)."""
    from cases import CaseError

    try:
        return resolve_case_set(cases)[0]
    except CaseError:
        return cases


def _traced_cases(cfg) -> str:
    """The case set the traces were made from: this run's, or for a re-analysis the traced run's
    (its run_config.json), which this run's ``cases`` flag does not change."""
    if not cfg.generate_traces:
        import json

        try:
            kept = json.loads(run_config_path(cfg).read_text(encoding="utf-8")).get("config", {}).get("cases")
        except (OSError, ValueError, AttributeError):
            kept = None
        if isinstance(kept, str) and kept:
            return kept
    return cfg.cases or "foofah"


def _by_policy(rows) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault(r["policy"], []).append(r)
    return out


def task_summary(records: list[dict]) -> dict:
    """``{"tasks": ...}``: the records' value types, public examples per case and the attempts the
    backend declined, when any task is not one example of tables or any attempt was declined; else
    ``{}`` (a Foofah run's summary is as it was)."""
    from collections import Counter

    types = Counter(r["task"].get("value_type", "table") for r in records)
    examples = Counter(len(r["task"].get("examples") or [0]) for r in records)
    direct = sum((r.get("direct") or {}).get("finish_reason") == "declined" for r in records)
    rounds = [x for r in records for ch in [r.get("rounds") or [], *(r.get("samples") or [])] for x in ch]
    declined = sum(x.get("finish_reason") == "declined" for x in rounds)
    if set(types) <= {"table"} and set(examples) <= {1} and not direct and not declined:
        return {}
    return {"tasks": {"value_types": dict(sorted(types.items())), "examples": {str(k): v for k, v in sorted(examples.items())},
                      "declined": {"direct": direct, "of_direct": len(records), "rounds": declined,
                                   "of_rounds": len(rounds)}}}


def traced_runtime(run_config_file) -> dict | None:
    """The sandbox runtime a run's programs ran with (its run_config.json's trace settings), or None:
    the standard library only, or no readable file. What a re-analysis's summary, an export and a
    replay of that run read."""
    try:
        conf = json.loads(Path(run_config_file).read_text(encoding="utf-8"))
        return (conf.get("trace_config") or {}).get("sandbox_runtime") or None
    except (OSError, ValueError, AttributeError):
        return None


def write_outputs(cfg, result, records, timing, t0, log) -> dict:
    from sandbox import protections

    from controller.report.figures import write_figures
    from controller.report.markdown import write_report

    reports = reports_dir(cfg)
    summary, outcomes = result
    # per-case pooled CV records of every split seed, written as predictions/cv/<policy>.jsonl
    per_seed = result.split_seed_records
    if per_seed is None and result.cv_pooled:
        s = (summary.get("cv") or {}).get("split_seed", cfg.split_seed)
        per_seed = [{"split_seed": s, "records": [{**o, "policy": p} for p, outs in result.cv_pooled.items()
                                                  for o in outs]}]
    cases = _traced_cases(cfg)
    runtime = traced_runtime(run_config_path(cfg))  # (checked before the analysis: checks.read_run_config)
    full = {
        # every setting as config.toml spells it, what the run resolved, and the case set's digest
        "config": {**run_settings(cfg), "cases": cases, "case_set": case_set_name(cases),
                   "trace_file": trace_path(cfg).name},
        "versions": versions(),
        "n_records": len(records),
        # what made the traces (a re-analysis's own backend flags did not): the records' backend and model
        "traces": {"backend": ", ".join(sorted({r["backend"] for r in records})),
                   "model": ", ".join(dict.fromkeys(r["model"] for r in records)),
                   **({"sandbox_runtime": runtime} if runtime else {})},
        **task_summary(records),
        **summary,
        "sandbox": protections(),
    }
    full["timing"] = {**timing, **summary.get("timing", {}), "total_s": round(time.monotonic() - t0, 2)}
    write_predictions(reports / "predictions", outcomes)
    if per_seed:
        write_cv_predictions(reports / "predictions" / "cv", [
            {"split_seed": b["split_seed"], "outcomes": _by_policy(b["records"])} for b in per_seed])
    write_figures(full, reports / "figures")
    write_report(full, reports / "report.md")
    atomic_write_json(reports / "final_summary.json", full)
    log(f"wrote {reports / 'final_summary.json'}, report.md, figures/ and predictions/")
    from controller.report.viewer import write_viewer

    log(f"wrote {write_viewer(reports, full, records, outcomes)}")
    note = prompt_version_note(records)
    if note:  # the viewer's prompts are rebuilt from today's templates
        log(f"warning: viewer: {note}")
    if cfg.export_sft:
        from controller.report.sft import describe, export_sft

        n = export_sft(records, reports / "sft", cfg.rollout.repair_history, cfg.sft_max_tokens or None,
                       all_splits=cfg.sft_splits == "all", strip_history=cfg.backend.synth_compact, warn=log)
        log(f"wrote {reports / 'sft'}: {describe(n)}")
    return full
