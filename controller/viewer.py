"""``reports/viewer/index.html``: one self-contained page to browse a run (no network, no server).

The page is ``viewer_assets/page.html`` with its CSS, its JavaScript and the run's data inlined
(the data as one JSON object), so the single file opens from disk and can be sent on. The data
per case: the visible task, the direct answer, every program chain (sample 0 is ``rounds``; v1's
flat ``samples`` and v2's list of sample chains both load), the repair prompt each FIX round was
sent (rebuilt by ``tracegen.conversations``), each policy's actions and outcome, and, kept apart
under ``hidden``, everything graded against the hidden answer, which the page marks as hindsight.

``build_viewer(reports_dir)`` reads the run's files (final_summary.json, the trace file,
split_manifest.json, predictions/*.jsonl); the pipeline passes what it has in memory instead.
"""
from __future__ import annotations

import json
from pathlib import Path

from tracegen.conversations import program_chains, record_task, round_messages
from tracegen.records import read_traces

from .failures import direct_category, repeated_repairs, round_category, visibly_solvable
from .figures import ordered_policies
from .outputs import atomic_write_text

ASSETS = Path(__file__).parent / "viewer_assets"
HELDOUT_SPLITS = ("dev", "test")


class ViewerInputError(Exception):
    """A run's files cannot be read: one line naming the file."""


# ----------------------------------------------------------------------------- per case


def _round_view(task, chain: list[dict], i: int, hidden_exact) -> dict:
    rnd = chain[i]
    keep = ("round", "kind", "raw", "code", "parse", "visible", "visible_pass", "test", "test_output",
            "finish_reason", "search_nodes")
    out = {k: rnd.get(k) for k in keep if k in rnd}
    out["feedback_in"] = round_messages(task, chain, i)[-1]["content"] if i else None
    out["hidden_exact"] = hidden_exact
    return out


def _categories(record: dict, chains) -> list[str]:
    """Failure tags from controller/failures.py's categories (graded ones need the hidden answer)."""
    hidden = record.get("hidden") or {}
    if hidden.get("answer") is None:
        return ["unscored"]
    tags = [f"direct: {direct_category(record)}"]
    for chain, exact in chains:
        for rnd, ex in zip(chain, exact):
            cat = round_category(rnd)
            tags.append(f"round: {cat}")
            if cat == "pass" and ex is False:
                tags.append("overfit program")
            if cat != "pass" and ex:
                tags.append("hidden-only round")
    if repeated_repairs(record):
        tags.append("repeated repair")
    if record.get("rounds") is not None and not visibly_solvable(record):
        tags.append("unsolvable")
    return sorted(set(tags))


def _outcome(record: dict, chains) -> str:
    hidden = record.get("hidden") or {}
    if hidden.get("answer") is None:
        return "unscored"
    direct = bool(hidden.get("direct_exact"))
    program = any(r.get("visible_pass") and ex for chain, exact in chains for r, ex in zip(chain, exact))
    return {(True, True): "both", (True, False): "direct right", (False, True): "program right"}.get(
        (direct, program), "neither")


def case_view(record: dict, policies: list[str], by_policy: dict[str, dict]) -> dict:
    task = record_task(record)
    chains = program_chains(record)
    hidden = record.get("hidden") or {}
    pol = []
    for p in policies:
        o = by_policy.get(p, {}).get(record["case_id"])
        pol.append(None if o is None else [list(o.get("actions") or []), o.get("source"), o.get("correct")])
    graded = {x[2] for x in pol if x is not None}
    direct = record.get("direct") or {}
    return {
        "id": record["case_id"], "family": record["family"], "split": record.get("split", "unassigned"),
        "task": record.get("task") or {},
        "direct": {k: direct.get(k) for k in ("raw", "table", "parse", "finish_reason")},
        "chains": [[_round_view(task, chain, i, exact[i]) for i in range(len(chain))] for chain, exact in chains],
        "hidden": {"answer": hidden.get("answer"), "direct_exact": hidden.get("direct_exact"),
                   "direct_category": direct_category(record) if hidden.get("answer") is not None else None},
        "outcome": _outcome(record, chains), "cats": _categories(record, chains),
        "pol": pol, "disagree": len(graded) > 1,
    }


# ----------------------------------------------------------------------------- the run


def run_view(summary: dict, records: list[dict], figures: list[str]) -> dict:
    cfg = summary.get("config") or {}
    backend = cfg.get("backend") or {}
    pr = summary.get("policy_results") or {}
    heldout = [{"policy": p, **{s: (pr[p] or {}).get(s) for s in HELDOUT_SPLITS}} for p in ordered_policies(pr)]
    sizes: dict[str, dict] = {}
    for r in records:
        s = sizes.setdefault(r.get("split", "unassigned"), {"cases": 0, "families": set()})
        s["cases"] += 1
        s["families"].add(r["family"])
    return {
        "case_set": cfg.get("case_set") or cfg.get("cases"), "backend": backend.get("name"),
        "model": backend.get("model") or (records[0].get("model") if records else None),
        "max_repairs": (cfg.get("rollout") or {}).get("max_repairs"),
        "program_samples": (cfg.get("rollout") or {}).get("program_samples"),
        "trace_file": cfg.get("trace_file"), "n_records": len(records),
        "splits": {s: {"cases": v["cases"], "families": len(v["families"])} for s, v in sorted(sizes.items())},
        "heldout": heldout, "figures": figures,
    }


def viewer_data(summary: dict, records: list[dict], outcomes: dict[str, list[dict]], figures: list[str]) -> dict:
    policies = ordered_policies(outcomes) if outcomes else []
    by_policy = {p: {o["case_id"]: o for o in outcomes[p]} for p in policies}
    return {"run": run_view(summary, records, figures), "policies": policies,
            "cases": [case_view(r, policies, by_policy) for r in records]}


def render_page(data: dict) -> str:
    # "<" only occurs inside JSON strings: escaping it keeps "</script>" and "<!--" out of the page.
    blob = json.dumps(data, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")
    page = (ASSETS / "page.html").read_text()
    return (page.replace("/*CSS*/", (ASSETS / "viewer.css").read_text())
                .replace("/*JS*/", (ASSETS / "viewer.js").read_text())
                .replace("/*DATA*/null", blob))


def write_viewer(reports_dir: str | Path, summary: dict, records: list[dict],
                 outcomes: dict[str, list[dict]]) -> Path:
    """Write ``reports_dir/viewer/index.html`` from a run in memory; returns its path."""
    reports_dir = Path(reports_dir)
    figures = sorted(p.name for p in (reports_dir / "figures").glob("*.png"))
    path = reports_dir / "viewer" / "index.html"
    atomic_write_text(path, render_page(viewer_data(summary, records, outcomes, figures)))
    return path


# ----------------------------------------------------------------------------- from files


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ViewerInputError(f"{path}: cannot read it as JSON ({type(err).__name__})") from None


def load_run(reports_dir: str | Path) -> tuple[dict, list[dict], dict[str, list[dict]]]:
    """The summary, records (with the manifest's splits) and predictions of a finished run."""
    from tracegen.records import TraceFileError

    reports_dir = Path(reports_dir)
    spath = reports_dir / "final_summary.json"
    if not spath.is_file():
        raise ViewerInputError(f"{spath}: not found (is this a run root?)")
    summary = _read_json(spath)
    if not isinstance(summary, dict):
        raise ViewerInputError(f"{spath}: not a JSON object")
    tpath = reports_dir / ((summary.get("config") or {}).get("trace_file") or "fresh_traces.jsonl")
    if not tpath.is_file():
        raise ViewerInputError(f"{tpath}: trace file not found")
    try:
        records = read_traces(tpath, warn=lambda _msg: None)
    except TraceFileError as err:
        raise ViewerInputError(str(err)) from None
    mpath = reports_dir / "split_manifest.json"
    if mpath.is_file():  # the split in force is the manifest's, as in the pipeline
        manifest = _read_json(mpath)
        split_of = {f: s for s, fs in (manifest.get("split_families") or {}).items() for f in fs}
        for r in records:
            r["split"] = split_of.get(r["family"], "unassigned")
    outcomes = {}
    for p in sorted((reports_dir / "predictions").glob("*.jsonl")):
        try:
            outcomes[p.stem] = [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise ViewerInputError(f"{p}: not valid JSON lines") from None
    return summary, records, outcomes


def build_viewer(root: str | Path) -> Path:
    """(Re)build the viewer of the run at ``root`` (a run root or its reports/ folder)."""
    root = Path(root)
    reports_dir = root if (root / "final_summary.json").exists() else root / "reports"
    summary, records, outcomes = load_run(reports_dir)
    return write_viewer(reports_dir, summary, records, outcomes)
