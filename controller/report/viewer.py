"""``reports/viewer/index.html``: one self-contained page to browse a run (no network, no server).

The page is ``viewer_assets/page.html`` with its CSS, its JavaScript and the run's data inlined,
so the single file opens from disk and can be sent on. The data is one JSON object, gzipped and
base64-encoded (traces repeat themselves: code in ``raw`` and ``code``, tables in prompts; gzip
makes a 250-case page ~13x smaller) and unpacked by the browser's ``DecompressionStream``.

The data per case: the visible task, the direct answer, every program chain (sample 0 is
``rounds``; v1's flat ``samples`` and v2's list of sample chains both load), the prompts the model
was sent (the direct and WRITE prompts, and the turns each FIX prompt adds), rebuilt by the same
functions the rollout calls (``tracegen.prompts`` / ``tracegen.conversations``) since traces do
not store prompts, each FIX turn with the feedback its round recorded (schema v4: the text the
model was shown; rebuilt from today's templates for older records), every public example (grids
of small ints drawn as coloured cells, ARC's palette) and a program's run on each, per-attempt tokens, latency and sandbox time, each policy's actions and
outcome, and, kept apart under ``hidden``, everything graded against the hidden answer, which the
page marks as hindsight. The run: its config (sampling, seeds, budgets), the trace config of
``run_config.json``, versions, timing, the per-seed spread and held-out results.

``build_viewer(reports_dir)`` reads the run's files (final_summary.json, the trace file,
split_manifest.json, predictions/*.jsonl); the pipeline passes what it has in memory instead.

A run writes the data on its own too, ``viewer/data.json.gz`` (the very bytes the page inlines),
and the page beside it. A committed study keeps only the data file: ``write_page(viewer_dir)``
(``live-tool-dagger view``) writes ``index.html`` from it and today's assets, byte for byte the
page the run would have written, so the pages never drift from the assets in the repository.
"""
from __future__ import annotations

import base64
import gzip
import json
import re
import sys
from pathlib import Path

from tracegen.conversations import program_chains, prompt_version_note, todays_digest, record_task, round_messages
from tracegen.prompts import direct_messages, write_messages
from tracegen.records import assign_splits, read_traces, upgrade_record

from controller.study.failures import direct_category, repeated_repairs, round_category, visibly_solvable
from controller.env.registry import ordered as ordered_policies
from controller.report.outputs import atomic_write_bytes, atomic_write_text

ASSETS = Path(__file__).parent / "viewer_assets"
JS_FILES = ("util.js", "overview.js", "list.js", "case.js", "main.js")  # concatenated in this order
HELDOUT_SPLITS = ("dev", "test")
COST_KEYS = ("prompt_tokens", "completion_tokens", "gen_ms")
DATA_FILE = "data.json.gz"  # the page's data, as the page inlines it (base64 aside)
PAGE_FILE = "index.html"


class ViewerInputError(Exception):
    """A run's files cannot be read: one line naming the file."""


# ----------------------------------------------------------------------------- per case


def _cut_code(text: str, chain: list[dict], upto: int) -> tuple[str, list[int]] | None:
    """``text`` without the first program of ``chain[:upto + 1]`` (latest first) it quotes, and
    where to put it back: ``[round, a, b, at]`` means ``text[:at] + code[a:b] + text[at:]``.

    A model's raw answer quotes its code, and a FIX prompt quotes the earlier code: cutting those
    copies out keeps the page's data (parsed on every load) about a third smaller, exactly."""
    for k in range(upto, -1, -1):
        code = chain[k].get("code") or ""
        for piece in (code, code.strip()):
            at = text.find(piece) if len(piece) >= 40 else -1
            if at >= 0:
                a = code.find(piece)
                return text[:at] + text[at + len(piece):], [k, a, a + len(piece), at]
    return None


def _as_messages(prompt) -> list[dict] | None:
    """A recorded prompt (an imported attempt's: a string or chat messages) as messages; None: none."""
    if prompt is None:
        return None
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)


def _round_view(task, chain: list[dict], i: int, hidden_exact, repair_history: bool, recorded: bool = False) -> dict:
    """One round of a chain for the page. ``recorded``: an imported record's, whose prompts are the
    ones its file recorded (``prompt``, if any), never rebuilt from this toolkit's templates."""
    rnd = chain[i]
    keep = ("round", "kind", "feedback", "raw", "code", "parse", "visible", "visible_runs", "visible_pass", "test",
            "test_output", "finish_reason", "search_nodes", "model", "logprobs", *COST_KEYS)
    out = {k: rnd.get(k) for k in keep if k in rnd}
    cut = _cut_code(out.get("raw") or "", chain, i)
    if cut:
        out["raw"], out["raw_ref"] = cut
    if recorded:
        out["prompt"] = _as_messages(rnd.get("prompt"))
        out["hidden_exact"] = hidden_exact
        return out
    # a FIX prompt is the WRITE prompt followed by these turns: the previous code as the model's
    # turn and the feedback on it (with --repair-history, every earlier attempt first)
    # (the feedback each round recorded, schema v4; rebuilt from today's templates for older records)
    turns = round_messages(task, chain, i, repair_history, recorded=True)[len(write_messages(task)):] if i else None
    for m in turns or []:
        cut = _cut_code(m["content"], chain, i - 1) if m["role"] == "assistant" else None
        if cut:
            m["content"], m["ref"] = cut
    out["fix_turns"] = turns
    out["hidden_exact"] = hidden_exact
    return out


def _categories(record: dict, chains) -> list[str]:
    """Failure tags from controller/study/failures.py's categories (graded ones need the hidden answer)."""
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


def case_view(record: dict, policies: list[str], by_policy: dict[str, dict], repair_history: bool = False) -> dict:
    record = upgrade_record(record)  # the page reads version 4 (a hand-built v2/v3 record too)
    task = record_task(record)
    chains = program_chains(record)
    hidden = record.get("hidden") or {}
    pol = []
    for p in policies:
        o = by_policy.get(p, {}).get(record["case_id"])
        pol.append(None if o is None else [list(o.get("actions") or []), o.get("source"), o.get("correct")])
    graded = {x[2] for x in pol if x is not None}
    direct = record.get("direct") or {}
    recorded = "source" in record  # imported: outputs made elsewhere, shown the prompts their file recorded
    prompts = ({"recorded": True, "direct": _as_messages(direct.get("prompt"))} if recorded
               else {"direct": direct_messages(task), "write": write_messages(task)})  # as the rollout builds them
    return {
        "id": record["case_id"], "family": record["family"], "split": record.get("split", "unassigned"),
        "task": record.get("task") or {},
        "direct": {k: direct.get(k) for k in ("raw", "value", "parse", "finish_reason", "search_nodes", "model", "logprobs",
                                              *COST_KEYS)},
        "prompts": prompts,
        "chains": [[_round_view(task, chain, i, exact[i], repair_history, recorded) for i in range(len(chain))]
                   for chain, exact in chains],
        "totals": record.get("totals") or {},
        "hidden": {"answer": hidden.get("answer"), "direct_exact": hidden.get("direct_exact"),
                   "direct_category": direct_category(record) if hidden.get("answer") is not None else None},
        "outcome": _outcome(record, chains), "cats": _categories(record, chains),
        "pol": pol, "disagree": len(graded) > 1,
    }


# ----------------------------------------------------------------------------- the run


def run_view(summary: dict, records: list[dict], figures: list[str], run_config: dict | None = None) -> dict:
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
        "ceiling": summary.get("ceiling"),  # the learnability ceiling (controller/study/ceiling.py)
        # run metadata: the whole config (sampling, seeds, budgets), what the traces were made with
        "config": cfg, "trace_config": (run_config or {}).get("trace_config"), "versions": summary.get("versions"),
        "timing": summary.get("timing"), "seeds": summary.get("seeds"), "split_method": summary.get("split_method"),
        "prompts": prompt_versions(records, run_config),
    }


def prompt_versions(records: list[dict], run_config: dict | None = None) -> dict:
    """The prompt templates' versions: the traces' (``unknown`` for records that name none), the
    trace config's, today's (the page's prompts are rebuilt with today's) and, when they differ,
    the one-line ``note`` (``prompt_version_note``) the page and the log show."""
    today = todays_digest(records)
    note = prompt_version_note(records, today)
    return {"traces": sorted({r.get("prompts") or "unknown" for r in records}),
            "trace_config": ((run_config or {}).get("trace_config") or {}).get("prompts"), "today": today,
            **({"note": note} if note else {})}


def viewer_data(summary: dict, records: list[dict], outcomes: dict[str, list[dict]], figures: list[str],
                run_config: dict | None = None) -> dict:
    policies = ordered_policies(outcomes) if outcomes else []
    by_policy = {p: {o["case_id"]: o for o in outcomes[p]} for p in policies}
    history = bool(((summary.get("config") or {}).get("rollout") or {}).get("repair_history"))
    return {"run": run_view(summary, records, figures, run_config), "policies": policies,
            "cases": [case_view(r, policies, by_policy, history) for r in records]}


def pack_data(data: dict) -> bytes:
    """The data object as the page carries it: compact JSON, gzipped (mtime=0: the same run gives
    the same bytes)."""
    blob = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return gzip.compress(blob, compresslevel=9, mtime=0)


def page_of(packed: bytes) -> str:
    """The page around packed data (``pack_data``, or a ``viewer/data.json.gz`` as it is)."""
    # Base64 has no "<", so no "</script>" in the data.
    b64 = base64.b64encode(packed).decode("ascii")
    js = "\n".join((ASSETS / name).read_text() for name in JS_FILES)
    page = (ASSETS / "page.html").read_text().replace("/*DATA*/", b64)  # first: the assets cannot hold it
    return page.replace("/*CSS*/", (ASSETS / "viewer.css").read_text()).replace("/*JS*/", js)


def render_page(data: dict) -> str:
    return page_of(pack_data(data))


def read_page_data(path: str | Path) -> dict:
    """The data object inlined in a written page (for tests and scripts)."""
    m = re.search(r'<script id="viewer-data" type="application/gzip;base64">([A-Za-z0-9+/=]*)</script>',
                  Path(path).read_text())
    if m is None:
        raise ViewerInputError(f"{path}: no viewer data in this page")
    return json.loads(gzip.decompress(base64.b64decode(m.group(1))))


def read_data_file(path: str | Path) -> dict:
    """The data object of a ``viewer/data.json.gz``."""
    try:
        return json.loads(gzip.decompress(Path(path).read_bytes()))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ViewerInputError(f"{path}: not readable viewer data ({type(err).__name__})") from None


def write_page(viewer_dir: str | Path) -> tuple[Path, bool]:
    """Write ``viewer_dir/index.html`` from ``viewer_dir/data.json.gz`` and today's assets (the page a
    run writes from the same data, byte for byte); returns its path and whether it was (re)written
    (an up-to-date page is left untouched). A missing or unreadable data file raises
    ``ViewerInputError``; a page that cannot be written raises ``OSError``."""
    viewer_dir = Path(viewer_dir)
    src = viewer_dir / DATA_FILE
    try:
        packed = src.read_bytes()
        gzip.decompress(packed)  # a truncated or foreign file fails here, not in the browser
    except (OSError, EOFError) as err:
        raise ViewerInputError(f"{src}: not readable viewer data ({type(err).__name__})") from None
    page, path = page_of(packed).encode("utf-8"), viewer_dir / PAGE_FILE
    try:
        if path.read_bytes() == page:
            return path, False
    except OSError:
        pass
    atomic_write_bytes(path, page)
    return path, True


def _run_config(reports_dir: Path, summary: dict) -> dict | None:
    """``run_config.json`` (the settings the traces were made with): metadata, so a missing or
    unreadable one leaves that part of the page empty rather than failing a finished run."""
    tag = (summary.get("config") or {}).get("tag")
    path = reports_dir / (f"run_config_{tag}.json" if tag else "run_config.json")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def write_viewer(reports_dir: str | Path, summary: dict, records: list[dict],
                 outcomes: dict[str, list[dict]]) -> Path:
    """Write ``reports_dir/viewer/data.json.gz`` and the page ``index.html`` from a run in memory;
    returns the page's path."""
    reports_dir = Path(reports_dir)
    figures = sorted(p.name for p in (reports_dir / "figures").glob("*.png"))
    data = viewer_data(summary, records, outcomes, figures, _run_config(reports_dir, summary))
    packed = pack_data(data)
    atomic_write_bytes(reports_dir / "viewer" / DATA_FILE, packed)  # what a committed study keeps
    path = reports_dir / "viewer" / PAGE_FILE
    atomic_write_text(path, page_of(packed))
    return path


# ----------------------------------------------------------------------------- from files


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ViewerInputError(f"{path}: cannot read it as JSON ({type(err).__name__})") from None


def _read_gzipped_traces(gz: Path) -> list[dict]:
    import tempfile

    from tracegen.records import TraceFileError

    try:
        data = gzip.decompress(gz.read_bytes())
    except (OSError, EOFError) as err:  # BadGzipFile is an OSError
        raise ViewerInputError(f"{gz}: not a readable gzip file ({type(err).__name__})") from None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / gz.stem
        path.write_bytes(data)
        try:
            return read_traces(path, warn=lambda _msg: None)
        except TraceFileError as err:  # name the file the user has, not the temporary copy
            raise TraceFileError(str(err).replace(str(path), str(gz))) from None


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
    gz = tpath.with_name(tpath.name + ".gz")  # a committed study may keep its traces gzipped
    if not tpath.is_file() and not gz.is_file():
        raise ViewerInputError(f"{tpath}: trace file not found")
    try:
        records = read_traces(tpath, warn=lambda _msg: None) if tpath.is_file() else _read_gzipped_traces(gz)
    except TraceFileError as err:
        raise ViewerInputError(str(err)) from None
    mpath = reports_dir / "split_manifest.json"
    if mpath.is_file():  # the split in force is the manifest's, as in the pipeline (which checked it)
        manifest = _read_json(mpath)
        assign_splits(records, manifest.get("split_families") or {}, manifest.get("probe_case_ids") or (),
                      trace_file=tpath, manifest=mpath, check=False)
    outcomes = {}
    # a committed study keeps them gzipped (scripts/slim_study.py): policy.jsonl or policy.jsonl.gz
    for p in sorted((reports_dir / "predictions").glob("*.jsonl*")):
        if not p.name.endswith((".jsonl", ".jsonl.gz")):
            continue
        try:
            text = gzip.decompress(p.read_bytes()).decode() if p.suffix == ".gz" else p.read_text()
            outcomes[p.name.split(".jsonl")[0]] = [json.loads(line) for line in text.splitlines() if line.strip()]
        except (UnicodeDecodeError, json.JSONDecodeError, gzip.BadGzipFile, EOFError):
            raise ViewerInputError(f"{p}: not valid JSON lines") from None
    return summary, records, outcomes


def build_viewer(root: str | Path) -> Path:
    """(Re)build the viewer of the run at ``root`` (a run root or its reports/ folder)."""
    root = Path(root)
    reports_dir = root if (root / "final_summary.json").exists() else root / "reports"
    summary, records, outcomes = load_run(reports_dir)
    note = prompt_version_note(records)
    if note:  # the page's prompts are rebuilt from today's templates
        print(f"warning: {reports_dir}: {note}", file=sys.stderr)
    return write_viewer(reports_dir, summary, records, outcomes)
