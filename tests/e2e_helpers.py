"""Small case sets cut from the shipped library, for end-to-end tests."""
import shutil
from pathlib import Path

LIBRARY = Path(__file__).resolve().parent.parent / "cases" / "data"


def small_case_dir(dst: Path, families: int = 10, per_family: int = 2) -> Path:
    """Copy the first ``per_family`` cases of ``families`` families (spread over the library)."""
    fams = sorted(p for p in LIBRARY.iterdir() if p.is_dir())
    step = max(len(fams) // families, 1)
    for fam in fams[::step][:families]:
        for f in sorted(fam.glob("*.json"))[:per_family]:
            (dst / fam.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dst / fam.name / f.name)
    return dst
