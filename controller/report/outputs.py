"""Writing a run's derived outputs: every file goes to a temporary name and is renamed into place,
so a reader (or a crash) never sees half a file."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from pathlib import Path

PREDICTION_KEYS = ("policy", "split", "case_id", "family", "actions", "source", "correct")


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())  # mkstemp makes 0600; a written file gets what open() would give
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (``os.umask`` sets it, and a
    thread creating a file between the two calls would get the wrong mode)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_json(path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_predictions(out_dir: str | Path, outcomes_by_policy: dict[str, list[dict]]) -> list[str]:
    """One JSONL per policy, one row per (policy, case)."""
    written = []
    for policy, outs in outcomes_by_policy.items():
        rows = [{k: o[k] for k in PREDICTION_KEYS} | {
            "program_generations": o["program_generations"], "repair_actions": o["repair_actions"]} for o in outs]
        path = Path(out_dir) / f"{policy}.jsonl"
        atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        written.append(str(path))
    return written


CV_KEYS = ("policy", "split_seed", "fold", "case_id", "family", "actions", "source", "correct", "direct_correct",
           "program_generations", "repair_actions", "generated_tokens", "search_nodes", "work")


def write_cv_predictions(out_dir: str | Path, per_seed: list[dict]) -> list[str]:
    """``predictions/cv/<policy>.jsonl``: every pooled cross-validation outcome, one row per
    (split seed, case), so each cross-validated statistic can be recomputed from files.
    ``per_seed``: ``[{"split_seed": s, "outcomes": {policy: [outcome, ...]}}, ...]``."""
    rows: dict[str, list[str]] = {}
    for block in per_seed:
        for policy, outs in block["outcomes"].items():
            rows.setdefault(policy, []).extend(
                json.dumps({k: o.get(k) for k in CV_KEYS} | {"policy": policy, "split_seed": block["split_seed"]},
                           ensure_ascii=False) + "\n" for o in outs)
    written = []
    for policy, lines in rows.items():
        path = Path(out_dir) / f"{policy}.jsonl"
        atomic_write_text(path, "".join(lines))
        written.append(str(path))
    return written


def versions() -> dict:
    """Package versions and the git commit, so a summary says what produced it."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("torch", "transformers", "peft", "scikit-learn", "scipy", "statsmodels", "vllm"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    try:
        out["git_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                           cwd=Path(__file__).parent, timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        out["git_commit"] = None
    return out
