"""Small case sets cut from the shipped library, and the command's path, for end-to-end tests."""
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIBRARY = REPO / "cases" / "data"
CLI = REPO / "scripts" / "run_live_tool_dagger.py"  # the command from a checkout, run as a child


def small_case_dir(dst: Path, families: int = 10, per_family: int = 2) -> Path:
    """Copy the first ``per_family`` cases of ``families`` families (spread over the library)."""
    fams = sorted(p for p in LIBRARY.iterdir() if p.is_dir())
    step = max(len(fams) // families, 1)
    for fam in fams[::step][:families]:
        for f in sorted(fam.glob("*.json"))[:per_family]:
            (dst / fam.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dst / fam.name / f.name)
    return dst


def untimed(rec):
    """A trace record without its timing fields (``*_ms``, ``*_s``): the only per-run values the
    trace contract allows, so two runs of a deterministic backend must agree on the rest."""
    if isinstance(rec, dict):
        return {k: untimed(v) for k, v in rec.items() if not (k.endswith("_ms") or k.endswith("_s"))}
    if isinstance(rec, list):
        return [untimed(v) for v in rec]
    return rec


def run_records(root: Path) -> list:
    """The untimed records of the run at ``root``."""
    from tracegen.records import read_traces

    return [untimed(r) for r in read_traces(root / "reports" / "fresh_traces.jsonl")]
