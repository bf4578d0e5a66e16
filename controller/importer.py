"""The subcommands ``live-tool-dagger import`` and ``live-tool-dagger export`` (docs/import.md).

``import FILE.jsonl --root ROOT`` reads and checks the whole file first (a bad line: one line naming
its number and key, exit 2, nothing written), builds a case per line, and traces the cases through
the run's own rollout (``controller.pipeline.generate``) with the ``imported`` backend answering
each request with the recorded output: the same sandbox runs, grading and record writing as a live
backend. The records land in ``ROOT/reports/fresh_traces.jsonl`` with split ``unassigned``;
``live-tool-dagger --root ROOT`` then analyses them like any run's (splits dealt from the families
then), with no case files. ``--resume`` continues an import that was stopped.

``export --root ROOT FILE.jsonl`` writes a run's traces in the import format; importing that file
with the run's ``--max-repairs`` and ``--program-samples`` gives back records whose analysis is the
run's (tests/controller/run/test_import_export.py).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tracegen.errors import ConfigError

SUBCOMMANDS = ("import", "export")


def _f(default, help: str, **meta):
    return field(default=default, metadata={"help": help, **meta})


@dataclass
class ImportArgs:
    """The flags of ``import`` (its file is a positional)."""

    root: str = _f(".", "run directory; the traces go to ROOT/reports/fresh_traces.jsonl")
    resume: bool = _f(False, "continue an import that was stopped, skipping the cases already traced")
    force: bool = _f(False, "with --resume: continue even if the file or the settings changed since")
    program_samples: int | None = _f(None, "program samples per case, K (default: the most chains any case of the "
                                           "file holds; chains past K are dropped and counted)")
    max_repairs: int | None = _f(None, "repair rounds after a chain's first program (default: the longest chain "
                                       "of the file minus one; attempts past it are dropped and counted)")
    exec_timeout_s: float = _f(1.5, "seconds per program run in the sandbox", flag="--exec-timeout")
    memory_mb: int = _f(256, "memory limit per program run")
    workers: int = _f(2, "sandbox worker processes")
    wave_size: int = _f(64, "cases per wave; Ctrl-C keeps the wave's finished cases (--resume continues)")
    progress: bool = _f(True, "hide progress", flag="--no-progress")

    def __post_init__(self):
        for name in ("program_samples", "exec_timeout_s", "memory_mb", "workers", "wave_size"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                raise ConfigError(f"must be > 0, got {v}", name)
        if self.max_repairs is not None and self.max_repairs < 0:
            raise ConfigError(f"must be >= 0, got {self.max_repairs}", "max_repairs")


@dataclass
class ExportArgs:
    """The flags of ``export`` (its output file is a positional)."""

    root: str = _f(".", "the run whose traces are exported (ROOT/reports/fresh_traces.jsonl)")
    tag: str | None = _f(None, "export fresh_traces_TAG.jsonl (default: none, fresh_traces.jsonl)")


def import_parser():
    from controller.commands import _parser

    return _parser(
        ImportArgs, [("file", dict(metavar="FILE.jsonl", help="the recorded outputs, one case per line "
                                                              "(docs/import.md)"))],
        prog="live-tool-dagger import",
        description="Import model outputs recorded elsewhere: every line is checked first, then each case's\n"
                    "recorded attempts are run, checked and graded as a live backend's (backend `imported`).",
        epilog="A chain is cut after its first program that passes every public example (the rest is counted).\n"
               "Then analyse: live-tool-dagger --root ROOT [flags]. See docs/import.md.")


def export_parser():
    from controller.commands import _parser

    return _parser(
        ExportArgs, [("file", dict(metavar="FILE.jsonl", help="where to write (replaced whole)"))],
        prog="live-tool-dagger export",
        description="Write a run's traces in the import format (docs/import.md): the tasks, the hidden answers\n"
                    "and every attempt with its tokens, model and prompt where recorded.",
        epilog="See docs/import.md.")


def _run_config(opts: ImportArgs, source):
    """The ``RunConfig`` an import traces with: backend ``imported`` on the file, K and the repair
    budget from the file unless given."""
    from controller.config import RunConfig
    from tracegen.backends import BackendConfig
    from tracegen.rollout import RolloutConfig

    k = opts.program_samples or max(source.max_samples, 1)
    r = opts.max_repairs if opts.max_repairs is not None else max(source.longest_chain - 1, 0)
    return RunConfig(root=opts.root, cases=f"import:{source.name}", generate_traces=True, resume=opts.resume,
                     force=opts.force,
                     progress=opts.progress, workers=opts.workers,
                     backend=BackendConfig(name="imported", import_path=str(Path(source.path).resolve())),
                     rollout=RolloutConfig(max_repairs=r, program_samples=k, exec_timeout_s=opts.exec_timeout_s,
                                           memory_mb=opts.memory_mb, wave_size=opts.wave_size,
                                           progress=opts.progress, sandbox_runtime=source.runtime))


def import_main(argv: list[str]) -> int:
    from controller.args import config_text
    from controller.checks import check_flags, check_trace_file
    from controller.commands import _parse
    from controller.config import trace_config
    from controller.pipeline import generate
    from controller.report.outputs import atomic_write_text
    from controller.run_folder import reports_dir, set_previous_run_aside, trace_path
    from tracegen.backends.imported import ImportedBackend
    from tracegen.importfile import ImportFileError, read_import_file
    from sandbox.runtime import Runtime, RuntimeUnavailable, check_available
    from tracegen.records import read_traces

    args, opts = _parse(ImportArgs, import_parser, argv)
    if args is None:
        return opts
    log = print
    try:
        source = read_import_file(args.file)
        if source.runtime:  # numpy, say: installed here, or a one-line error before anything runs
            check_available(Runtime.from_json(source.runtime))
        cfg = _run_config(opts, source)
        check_flags(cfg)
        cfg = cfg.resolved()
        cases = [c.case() for c in source.cases]
        tcfg = trace_config(cfg, cases)
        done, _ = check_trace_file(cfg, tcfg, log)
        backend = ImportedBackend(cfg.backend, source)
        set_previous_run_aside(cfg, log)
        reports_dir(cfg).mkdir(parents=True, exist_ok=True)
        atomic_write_text(reports_dir(cfg) / "config.toml", config_text(cfg))
    except (ImportFileError, ConfigError, RuntimeUnavailable) as err:  # the file, the root, a trace file to
        print(f"error: {err}", file=sys.stderr)                      # resume (UsageError), numpy missing
        return 2
    with_runtime = f", sandbox runtime {Runtime.from_json(source.runtime).describe()}" if source.runtime else ""
    log(f"importing {len(cases)} cases from {source.name} (K = {cfg.rollout.program_samples}, max repairs "
        f"{cfg.rollout.max_repairs}{with_runtime}) -> {trace_path(cfg)}")
    try:
        generate(cfg, backend, cases, {}, tcfg, done, log)
    except KeyboardInterrupt:
        print("interrupted: finished records are kept; rerun with --resume to continue", file=sys.stderr)
        return 130
    # validated as they were written: counting reads them back without checking again
    counts = import_counts(source, read_traces(trace_path(cfg), validate=False, warn=log), cfg.rollout.program_samples)
    log(summary_line(counts))
    log(f"analyse with: live-tool-dagger --root {opts.root}")
    return 0


def import_counts(source, records, k: int) -> dict:
    """What became of the file's attempts in ``records``: used, dropped (and why), unparsable."""
    from tracegen.importfile import GIVEN

    by_id = {r["case_id"]: r for r in records}
    n = {"cases": 0, "attempts": 0, "used": 0, "cut_after_pass": 0, "dropped_after_pass": 0,
         "dropped_over_budget": 0, "dropped_samples": 0, "dropped_direct": 0, "unparsable": 0}
    for c in source.cases:
        rec = by_id.get(c.case_id)
        if rec is None:
            continue
        n["cases"] += 1
        n["attempts"] += c.attempts
        n["dropped_direct"] += max(len(c.direct) - 1, 0)
        chains = [ch for ch in [rec["rounds"], *rec.get("samples", [])] if ch]
        parts = ([rec["direct"]] if c.direct else []) + [p for ch in chains for p in ch]
        n["used"] += len(parts)
        n["unparsable"] += sum(p["parse"]["status"] not in ("ok", "repaired", GIVEN) for p in parts)
        for j, recorded in enumerate(c.programs):
            if j >= k:
                n["dropped_samples"] += len(recorded)
                continue
            kept = chains[j] if j < len(chains) else []
            left = len(recorded) - len(kept)
            if left and kept and kept[-1]["visible_pass"]:
                n["cut_after_pass"] += 1
                n["dropped_after_pass"] += left
            else:
                n["dropped_over_budget"] += left
    return n


def summary_line(n: dict) -> str:
    def s(k, word):
        return f"{n[k]} {word}{'s' * (n[k] != 1)}"

    extra = [f"{s(k, word)} {what}" for k, word, what in (
        ("dropped_over_budget", "attempt", "past --max-repairs dropped"),
        ("dropped_samples", "attempt", "of chains past --program-samples dropped"),
        ("dropped_direct", "direct answer", "after the first dropped")) if n[k]]
    return (f"imported {s('cases', 'case')}, {s('attempts', 'attempt')} ({n['used']} used): "
            f"{s('cut_after_pass', 'chain')} cut after a pass ({s('dropped_after_pass', 'attempt')} dropped), "
            f"{s('unparsable', 'unparsable attempt')}" + "".join(f"; {e}" for e in extra))


def export_main(argv: list[str]) -> int:
    from controller.commands import _parse
    from controller.run_folder import trace_path
    from tracegen.importfile import export_case
    from tracegen.records import TraceFileError, read_traces

    args, opts = _parse(ExportArgs, export_parser, argv)
    if args is None:
        return opts
    path = trace_path(opts)
    try:
        records = read_traces(path, warn=lambda m: print(m, file=sys.stderr))
    except TraceFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not records:
        print(f"error: {path}: no trace records to export", file=sys.stderr)
        return 2
    import json

    from controller.run_folder import run_config_path, traced_runtime

    runtime = traced_runtime(run_config_path(opts))
    lines = [json.dumps(export_case(r, runtime), ensure_ascii=False, separators=(",", ":")) for r in records]
    out = Path(args.file)
    tmp = out.with_name(f".{out.name}.export-{os.getpid()}")
    try:
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.replace(tmp, out)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        print(f"error: {out}: cannot write ({err.strerror or err})", file=sys.stderr)
        return 2
    k = max(1 + len(r.get("samples", [])) for r in records)
    repairs = max(int(r.get("max_repairs", 0)) for r in records)
    print(f"exported {len(records)} cases to {out}; the run traced with --max-repairs {repairs} --program-samples "
          f"{k}: import it with live-tool-dagger import {out} --root NEW_ROOT --max-repairs {repairs} "
          f"--program-samples {k}")
    return 0


def main(argv: list[str]) -> int:
    """``argv[0]`` names the subcommand."""
    return {"import": import_main, "export": export_main}[argv[0]](argv[1:])
