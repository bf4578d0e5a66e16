"""Finished runs on disk: finding them, reading their files, and the list of runs (``view``).

A run is a folder whose ``reports/final_summary.json`` exists (the run's root), or a reports
folder itself that holds ``final_summary.json`` (a committed study under ``results/``, or a
``reports.<UTC time>/`` folder a later run set aside). ``load_run`` reads one, ``find_runs``
walks a folder for all of them, ``describe`` says in a few fields what a run was, ``runs_text``
and ``runs_html`` show the list. A file that is missing, unreadable or not what it should be
raises ``RunFilesError`` with one line that names it.
"""
from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

SUMMARY = "final_summary.json"
SKIP_DIRS = {"cache", "adapters", "viewer", "predictions", "figures", "sft", "__pycache__", "node_modules"}


class RunFilesError(ValueError):
    """A run's file is missing, unreadable or invalid; the message is one line naming it."""


@dataclass
class Run:
    root: Path                 # the run's root: the folder holding reports/ (or the reports folder itself)
    reports: Path              # the folder holding final_summary.json
    summary: dict
    run_config: dict | None    # run_config.json, None when the run has none (analysed without tracing)
    _predictions: dict = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        """A short name: the root folder's name (the reports folder's own when it is not ``reports``)."""
        return self.root.name or str(self.root)

    def predictions(self, policy: str) -> list[dict]:
        if policy not in self._predictions:
            self._predictions[policy] = read_predictions(self.reports / "predictions" / f"{policy}.jsonl")
        return self._predictions[policy]


# ----------------------------------------------------------------------------- reading


def read_text(path: Path) -> str:
    """The file's text; a missing or unreadable file raises ``RunFilesError`` naming it. A file
    missing as ``path`` but present gzipped (``path.gz``: a committed study, ``scripts/slim_study.py``)
    is read from that."""
    gz = path.with_name(path.name + ".gz")
    try:
        if not path.exists() and gz.is_file():
            import gzip

            return gzip.decompress(gz.read_bytes()).decode("utf-8")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunFilesError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise RunFilesError(f"{path}: cannot read it ({getattr(err, 'strerror', None) or err})") from None


def read_json(path: Path) -> dict:
    """A JSON object from ``path``; anything else raises ``RunFilesError`` naming the file."""
    return _json_object(read_text(path), str(path))


def _json_object(text: str, where: str) -> dict:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        at = f"line {err.lineno}: " if "\n" in text.strip() else ""  # a JSONL row names its line in ``where``
        raise RunFilesError(f"{where}: not valid JSON ({at}{err.msg})") from None
    if not isinstance(obj, dict):
        raise RunFilesError(f"{where}: not a JSON object")
    return obj


def reports_dir(path: str | Path) -> Path:
    """The folder holding a run's ``final_summary.json``: ``path/reports`` or ``path`` itself."""
    path = Path(path)
    if not path.is_dir():
        raise RunFilesError(f"{path}: no such folder")
    for cand in (path / "reports", path):
        if (cand / SUMMARY).exists():
            return cand
    raise RunFilesError(f"{path / 'reports' / SUMMARY}: no such file (give a run's root or its reports folder)")


def load_run(path: str | Path) -> Run:
    """Read a run's ``final_summary.json`` and ``run_config.json`` (optional); predictions load on demand."""
    reports = reports_dir(path)
    summary = read_json(reports / SUMMARY)
    if not isinstance(summary.get("policy_results"), dict):
        raise RunFilesError(f"{reports / SUMMARY}: no policy_results object (not a run's final summary)")
    cfg_path = reports / "run_config.json"
    run_config = read_json(cfg_path) if cfg_path.exists() else None
    root = reports.parent if reports.name == "reports" else reports
    return Run(root=root, reports=reports, summary=summary, run_config=run_config)


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def read_predictions(path: Path) -> list[dict]:
    """The rows of ``predictions/<policy>.jsonl`` (docs/outputs.md), each checked for the fields a
    comparison reads: ``case_id``, ``split``, ``family`` (strings), ``correct`` (true, false or
    null), ``program_generations`` and ``repair_actions`` (counts)."""
    text = read_text(path)
    rows, seen = [], set()
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        row = _json_object(line, f"{path} line {i}")
        bad = [k for k in ("case_id", "split", "family") if not isinstance(row.get(k), str)]
        if "correct" not in row or not (row["correct"] is None or isinstance(row["correct"], bool)):
            bad.append("correct")
        bad += [k for k in ("program_generations", "repair_actions") if not _count(row.get(k))]
        if bad:
            raise RunFilesError(f"{path} line {i}: missing or invalid {', '.join(bad)}")
        key = (row["split"], row["case_id"])
        if key in seen:
            raise RunFilesError(f"{path} line {i}: case {row['case_id']!r} appears twice")
        seen.add(key)
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- what a run was


def date_of(run: Run) -> str:
    """When the run's traces started (``run_config.json``), else its summary's file time."""
    for when in ((run.run_config or {}).get("traces_started_utc"),
                 (run.summary.get("study") or {}).get("traces_started_utc")):
        if isinstance(when, str) and when and when != "unknown":
            return when
    mtime = (run.reports / SUMMARY).stat().st_mtime
    return datetime.fromtimestamp(mtime, timezone.utc).isoformat(timespec="seconds") + " (file time)"


def headline(run: Run, policy: str, split: str = "test") -> dict | None:
    r = ((run.summary.get("policy_results") or {}).get(policy) or {}).get(split)
    if not isinstance(r, dict):
        return None
    return {"exact": r.get("exact"), "n": r.get("n"), "program_generations": r.get("program_generations"),
            "repair_actions": r.get("repair_actions")}


def describe(run: Run) -> dict:
    """A run in a few fields: where, which cases, which backend and model, when, and its headline numbers."""
    cfg = run.summary.get("config") or {}
    backend = cfg.get("backend") or {}
    tcfg = (run.run_config or {}).get("trace_config") or {}
    rollout = cfg.get("rollout") or {}
    viewer = run.reports / "viewer" / "index.html"
    return {
        "root": str(run.root), "reports": str(run.reports), "name": run.name,
        "case_set": cfg.get("case_set") or cfg.get("cases"), "case_set_digest": tcfg.get("case_set"),
        "n_cases": tcfg.get("n_cases"), "n_records": run.summary.get("n_records"),
        "backend": backend.get("name") or tcfg.get("backend"), "model": backend.get("model") or tcfg.get("model"),
        "max_repairs": rollout.get("max_repairs"), "program_samples": rollout.get("program_samples"),
        "date": date_of(run), "git_commit": (run.summary.get("versions") or {}).get("git_commit"),
        "best_fixed": (run.summary.get("best_fixed") or {}).get("chosen"),
        "best_fixed_test": headline(run, "best_fixed"), "learned_rule_test": headline(run, "learned_rule"),
        "viewer": str(viewer) if viewer.exists() else None,
        "report": str(run.reports / "report.md") if (run.reports / "report.md").exists() else None,
    }


def model_text(info: dict) -> str:
    return f"{info['backend'] or '?'}" + (f" / {info['model']}" if info.get("model") else "")


def result_text(h: dict | None) -> str:
    if not h or h.get("exact") is None:
        return "-"
    return f"{h['exact']}/{h['n']}, {h['program_generations']} gens"


# ----------------------------------------------------------------------------- finding runs


def find_runs(folder: str | Path) -> tuple[list[Run], list[str]]:
    """Every run under ``folder`` (``folder`` itself too), sorted by path, and one warning line per
    folder whose files could not be read (it is left out). Hidden folders and a run's own
    sub-folders (cache, adapters, viewer, predictions, figures, sft) are not searched."""
    folder = Path(folder)
    if not folder.is_dir():
        raise RunFilesError(f"{folder}: no such folder")
    found: list[Run] = []
    warnings: list[str] = []
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        if SUMMARY in files:
            try:
                found.append(load_run(here))
            except RunFilesError as err:
                warnings.append(f"warning: {err} (skipped)")
            dirs[:] = [d for d in dirs if not d.startswith("compare_")]
    return sorted(found, key=lambda r: str(r.reports)), warnings


def where(run: Run, folder: Path) -> str:
    try:
        rel = run.root.resolve().relative_to(folder.resolve())
    except ValueError:
        return str(run.root)
    return str(rel) if str(rel) != "." else "."


def runs_text(runs: list[Run], folder: Path) -> str:
    """The list ``view`` prints: one line per run."""
    head = ("run", "case set", "backend / model", "traces started", "records", "best fixed (test)", "learned_rule (test)")
    rows = []
    for run in runs:
        i = describe(run)
        best = f"{i['best_fixed']}: {result_text(i['best_fixed_test'])}" if i["best_fixed"] else "-"
        rows.append((where(run, folder), str(i["case_set"] or "?"), model_text(i), i["date"],
                     str(i["n_records"] if i["n_records"] is not None else "?"), best, result_text(i["learned_rule_test"])))
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows])


# ----------------------------------------------------------------------------- pages

STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.6em 0 1.4em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;
vertical-align:top}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:13px}.right{color:#176117}.wrong{color:#a11}.muted{color:#777}h2{margin-top:1.6em}"""


def esc(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def href(target: str | Path, page_dir: Path, fragment: str = "") -> str:
    """A link from a page in ``page_dir`` to ``target``: relative (the pages and the runs can move
    together), URL-quoted, with ``fragment`` appended as is."""
    target = Path(target)
    try:
        rel = os.path.relpath(target.resolve(), page_dir.resolve())
        url = quote(Path(rel).as_posix(), safe="/")
    except ValueError:  # another drive
        url = target.resolve().as_uri()
    return esc(url + fragment)


def page(title: str, body: str) -> str:
    """A self-contained HTML page (no script, nothing from a network)."""
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def runs_html(runs: list[Run], folder: Path, page_dir: Path) -> str:
    """The index page of ``view``: one row per run, linking its viewer, report and summary."""
    rows = []
    for run in runs:
        i = describe(run)
        links = [f'<a href="{href(i["viewer"], page_dir)}" class="viewer">viewer</a>' if i["viewer"] else
                 '<span class="muted">no viewer</span>']
        if i["report"]:
            links.append(f'<a href="{href(i["report"], page_dir)}">report.md</a>')
        links.append(f'<a href="{href(run.reports / SUMMARY, page_dir)}">{SUMMARY}</a>')
        best = f"<code>{esc(i['best_fixed'])}</code> {esc(result_text(i['best_fixed_test']))}" if i["best_fixed"] else "-"
        rows.append(f'<tr data-root="{esc(i["root"])}"><td><code>{esc(where(run, folder))}</code></td>'
                    f"<td>{esc(i['case_set'])}</td><td>{esc(model_text(i))}</td><td>{esc(i['date'])}</td>"
                    f"<td class=num>{esc(i['n_records'])}</td><td>{best}</td>"
                    f"<td>{esc(result_text(i['learned_rule_test']))}</td><td>{' · '.join(links)}</td></tr>")
    body = (f"<h1>Runs under <code>{esc(folder)}</code></h1>\n<p>{len(runs)} run{'s' * (len(runs) != 1)}. "
            "Compare two of them on the same cases: <code>live-tool-dagger compare ROOT_A ROOT_B</code>.</p>\n"
            "<table id=runs><thead><tr><th>run</th><th>case set</th><th>backend / model</th><th>traces started</th>"
            "<th>records</th><th>best fixed (test)</th><th>learned_rule (test)</th><th>files</th></tr></thead>"
            f"<tbody>\n{chr(10).join(rows)}\n</tbody></table>")
    return page(f"Runs under {folder}", body)
