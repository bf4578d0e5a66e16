"""Token lengths of the synthesizer's programs, readable vs compact (docs/synthesizer.md).

    python scripts/program_lengths.py                   # the shipped library, SmolLM2's tokenizer
    python scripts/program_lengths.py --cases DIR --model FOLDER

For one case per file of the case set, the write budget's search (``--synth-write-nodes``'
default, 100 nodes) runs on the public example; each program it finds is rendered three ways and
counted with the model's tokenizer: today's readable rendering (what ``--backend synth`` answers
with), the same without the ``# program:`` / ``# tried:`` bookkeeping lines, and the compact
rendering as the distillation export shows it (``--synth-compact``, bookkeeping stripped).
The renderings compute the same thing (tests/tracegen/test_synth_compact.py runs both in the
sandbox); only the text differs.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cases import load_case_set  # noqa: E402
from tracegen.synth import emit_code, synthesize  # noqa: E402
from tracegen.synth.codegen import strip_history  # noqa: E402


def _summary(values: list[int]) -> str:
    v = sorted(values)
    return f"median {statistics.median(v):.0f}, p90 {v[int(0.9 * (len(v) - 1))]}, max {v[-1]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="library", help="case set or folder (default: library)")
    ap.add_argument("--model", default="smollm2", help="tokenizer: a packaged name or a model folder")
    ap.add_argument("--nodes", type=int, default=100, help="search nodes per case (default: 100, the write budget)")
    args = ap.parse_args(argv)
    from transformers import AutoTokenizer

    from tracegen.models import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model(args.model))

    def count(text: str) -> int:
        return len(tok(text)["input_ids"])

    cases = load_case_set(args.cases)
    kinds: dict[str, list[int]] = {"readable": [], "readable, bookkeeping stripped": [], "compact": []}
    for case in cases:
        result = synthesize([(case.input_table, case.output_table)], max_nodes=args.nodes)
        if not result.found:
            continue
        full = emit_code(result.program)
        kinds["readable"].append(count(full))
        kinds["readable, bookkeeping stripped"].append(count(strip_history(full)))
        kinds["compact"].append(count(strip_history(emit_code(result.program, compact=True))))
    n = len(kinds["readable"])
    print(f"{args.cases}: {n} of {len(cases)} cases with a program found in {args.nodes} nodes; "
          f"tokens ({args.model} tokenizer):")
    for name, values in kinds.items():
        print(f"  {name:32s} {_summary(values)}")
    ratio = statistics.median(c / r for c, r in zip(kinds["compact"], kinds["readable"]))
    print(f"  compact / readable, median per program: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
