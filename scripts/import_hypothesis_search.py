"""Convert the Hypothesis Search bundle (GPT-4's selected ARC programs) to the import format.

    python scripts/import_hypothesis_search.py BUNDLE_DIR OUT.jsonl
    live-tool-dagger import OUT.jsonl --root ROOT

BUNDLE_DIR is ``../shared/data/real-outputs/hypothesis-search-arc-gpt4/`` (MIT; its README says what
each file holds). Only the documented format is used (docs/import.md): every ARC test pair of a task
is a case (``<task>#<i>`` when the task has several), its training pairs are the examples, the family
is the task (ARC: every task its own family), programs define ``transform_grid``, and the selected
program (after the source's repairs, which the bundle does not hold) is a one-attempt chain, with
the model named. The bundle has no direct answers. Every line asks for the sandbox runtime the
source harness gave its programs (``RUNTIME``: numpy, as the global ``np``, and scipy, which one
program imports (``from scipy import ndimage``); the grid as an array); the import then needs numpy
and scipy installed. Standard library only.
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

MODEL = "gpt-4-0613"  # the bundle README's "model: gpt4-0613"
RUNTIME = {"modules": ["numpy", "scipy"], "globals": {"np": "numpy"}, "input": "array"}  # as the harness ran them


def convert(bundle: Path) -> list[dict]:
    with gzip.open(bundle / "tasks" / "arc_random100_tasks.json.gz") as fh:
        tasks = {t["larc_task_id"]: t for t in json.load(fh)}
    lines = []
    for row in map(json.loads, (bundle / "derived" / "selected_programs.jsonl").read_text().splitlines()):
        task = tasks[row["larc_task_id"]]
        stem = task["arc_file"].removesuffix(".json")
        for i, pair in enumerate(task["test"]):
            lines.append({
                "case_id": stem if len(task["test"]) == 1 else f"{stem}#{i}", "family": stem,
                "examples": [{"input": p["input"], "output": p["output"]} for p in task["train"]],
                "test": {"input": pair["input"], "output": pair["output"]},
                "entry": "transform_grid",
                "runtime": RUNTIME,
                "programs": [[{"code": row["selected_program"], "model": MODEL}]],
            })
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    lines = convert(Path(argv[0]))
    Path(argv[1]).write_text("".join(json.dumps(x) + "\n" for x in lines))
    print(f"wrote {len(lines)} cases to {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
