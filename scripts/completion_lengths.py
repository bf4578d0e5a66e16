"""Token lengths of an SFT export's completions, against a generation limit (results/*/RECIPE.md).

    python scripts/completion_lengths.py --data EXPORT --limit 384
    python scripts/completion_lengths.py --data EXPORT --limit 384 --card results/smollm2_distilled/model_card.json

Each row's completion (the answer the model is trained to write) is counted with the model's
tokenizer, its text alone (the end-of-turn token the model must also write is not counted). A
completion longer than ``--limit`` cannot be written whole under ``--max-new-tokens LIMIT``: the
trace cuts it. Prints, per kind and split file, how many rows the limit cuts; ``--card`` stores the
lengths in a model card (``completion_tokens``), from which the report's deviations section counts
the cut rows at the traces' own limit.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tracegen.models import resolve_model  # noqa: E402


def lengths(path: Path, tok) -> dict[str, list[int]]:
    """{kind: sorted completion token counts} of one export file."""
    out: dict[str, list[int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            text = "".join(m["content"] for m in row["completion"])
            out.setdefault(row.get("kind", "?"), []).append(len(tok(text, add_special_tokens=False)["input_ids"]))
    return {k: sorted(v) for k, v in sorted(out.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--data", required=True, help="export folder holding train.jsonl (and dev.jsonl)")
    ap.add_argument("--model", default="smollm2", help="tokenizer: a packaged name or a model folder")
    ap.add_argument("--limit", type=int, default=384, help="the generation limit (--max-new-tokens) to count against")
    ap.add_argument("--card", help="a model card (JSON) to store the train file's lengths in, as completion_tokens")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "train.jsonl").is_file():
        print(f"error: --data {data}: holds no train.jsonl", file=sys.stderr)
        return 2
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(resolve_model(args.model))
    found = {}
    for name in ("train", "dev"):
        if (data / f"{name}.jsonl").is_file():
            found[name] = lengths(data / f"{name}.jsonl", tok)
            for kind, v in found[name].items():
                cut = sum(n > args.limit for n in v)
                print(f"{name} {kind}: {cut} of {len(v)} completions over {args.limit} tokens "
                      f"(median {v[len(v) // 2]}, max {v[-1]})")
            allv = [n for v in found[name].values() for n in v]
            print(f"{name} all: {sum(n > args.limit for n in allv)} of {len(allv)} over {args.limit}")
    if args.card:
        card_path = Path(args.card)
        card = json.loads(card_path.read_text(encoding="utf-8")) if card_path.is_file() else {}
        card["completion_tokens"] = {
            "what": "token counts of the training export's completions (train.jsonl), the text alone",
            "tokenizer": args.model, "export_sha256": hashlib.sha256((data / "train.jsonl").read_bytes()).hexdigest(),
            "command": "python scripts/completion_lengths.py --data EXPORT --card " + args.card,
            "kinds": found["train"]}
        card_path.write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
        print(f"wrote completion_tokens into {card_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
