"""``--export-sft``: verified attempts as chat conversations for supervised fine-tuning.

Writes ``sft/train.jsonl`` and ``sft/dev.jsonl`` in TRL's conversational prompt-completion
format: one JSON object per line with ``prompt`` (the messages the model was sent: system, user
and, in a repair, the earlier failed program as an assistant turn and the feedback on it) and
``completion`` (one assistant message: the verified answer), plus the extra fields ``case_id``,
``family``, ``split``, ``kind``, ``sample``, ``round`` and ``tokens``.

Only the completion is a training target. A repair conversation carries the failed attempt as
context, and a plain ``messages`` list would make it a target under TRL's defaults (the loss
covers every token of a conversation unless the chat template marks assistant turns with
``{% generation %}``, which Qwen's and SmolLM2's do not). With ``prompt``/``completion``,
``SFTTrainer`` sets ``completion_only_loss`` itself and gives the prompt's tokens no loss.
``tests/controller/report/test_sft_export.py`` checks this with TRL's own dataset preparation; docs/sft.md has the
training snippet.

``tokens`` is the length of prompt plus completion as the traced backend counted it (its
tokenizer and chat template for hf, vllm and openai; an estimate for synth). ``max_tokens``
(``--sft-max-tokens N``) leaves out longer rows, which TRL would otherwise truncate from the end,
cutting off the answer. By default (``auto``, 0 or None) no row is left out and the length to
train with is chosen from the data: the longest exported row, rounded up to a multiple of
``ROUND_TO``. ``export.json`` beside the rows says which length that is, how it was chosen, and
per kind (direct, program: right at the first program, repair: right after a FIX) how many rows
were kept, how many were left out for their length, and their token lengths.

A verified trajectory is a direct answer that is right on the new input, or a program chain up
to its first round that passed the public example and is right on the new input; its messages
are the exact prompt of that round (rebuilt by ``tracegen.conversations.round_messages``, so a
repair round carries the earlier code and the feedback the model got: the text the round recorded,
schema v4) and the stored raw answer. Any task value works: the prompts are the rollout's own.

Distillation (``all_splits``): a case set that no study scores (generated instances, docs/sft.md)
gives every split's rows: train and test to ``train.jsonl``, dev to ``dev.jsonl`` (a held-out
validation set of whole families). ``strip_history`` drops the synthesizer's ``# program:`` and
``# tried:`` bookkeeping lines from every assistant turn (prompt and completion alike): they name
its search's keys, which mean nothing to a model learning to write the program.

Leakage: by default only records of the train and dev splits are exported (test and unassigned are left
out), and a record whose family has any test-split case is left out too, so no test family can
reach the fine-tuning data even from a mislabelled record.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tracegen.conversations import (direct_conversation, program_chains, prompt_version_note, todays_digest,
                                    round_conversation)
from tracegen.synth.codegen import strip_history as _strip

from controller.report.outputs import atomic_write_json, atomic_write_text

EXPORT_SPLITS = ("train", "dev")
KINDS = ("direct", "program", "repair")
ROUND_TO = 256  # auto: the longest row's tokens rounded up to a multiple of this


def _tokens(part: dict) -> int:
    return int(part.get("prompt_tokens") or 0) + int(part.get("completion_tokens") or 0)


def _row(messages: list[dict], part: dict, **fields) -> dict:
    return {"prompt": messages[:-1], "completion": messages[-1:], **fields, "tokens": _tokens(part)}


def verified_conversations(record: dict, repair_history: bool = False) -> list[dict]:
    """Every verified trajectory of one record as an SFT row (split filtering is the caller's)."""
    base = {"case_id": record["case_id"], "family": record["family"], "split": record.get("split")}
    rows = []
    hidden = record.get("hidden") or {}
    direct = record.get("direct") or {}
    if hidden.get("direct_exact") and direct.get("raw"):
        rows.append(_row(direct_conversation(record), direct, **base, kind="direct", sample=None, round=None))
    for j, (chain, exact) in enumerate(program_chains(record)):
        for i, rnd in enumerate(chain):
            if rnd.get("visible_pass") and exact[i] and rnd.get("raw"):
                rows.append(_row(round_conversation(record, chain, i, repair_history), rnd, **base,
                                 kind="program" if i == 0 else "repair", sample=j, round=i))
                break
    return rows


def auto_max_tokens(lengths: list[int]) -> int:
    """The length ``auto`` chooses: the longest row, rounded up to a multiple of ``ROUND_TO`` (0: no rows)."""
    return -(-max(lengths, default=0) // ROUND_TO) * ROUND_TO


def _lengths(values: list[int]) -> dict:
    if not values:
        return {"n": 0}
    v = sorted(values)
    return {"n": len(v), "min": v[0], "median": v[len(v) // 2], "max": v[-1]}


def _stripped(row: dict) -> dict:
    def clean(messages):
        return [{**m, "content": _strip(m["content"])} if m.get("role") == "assistant" else m for m in messages]
    return {**row, "prompt": clean(row["prompt"]), "completion": clean(row["completion"])}


def _warn(line: str) -> None:
    print(line, file=sys.stderr)


def export_sft(records: list[dict], out_dir: str | Path, repair_history: bool = False,
               max_tokens: int | None = None, all_splits: bool = False, strip_history: bool = False,
               warn=_warn) -> dict:
    """Write ``train.jsonl``, ``dev.jsonl`` and ``export.json`` under ``out_dir``; returns what
    ``export.json`` holds: rows per file (``train``, ``dev``), ``max_tokens`` (the length in force),
    ``chosen`` (``auto`` or ``given``), ``longest``, ``too_long`` (rows left out for having more
    than ``max_tokens`` tokens) and ``kinds`` (per kind: ``kept``, ``too_long``, ``lengths``).

    ``max_tokens``: None or 0 chooses the length from the rows (``auto_max_tokens``: nothing is
    left out). ``repair_history``: the traces were made with ``--repair-history`` (FIX prompts
    showed every earlier attempt), so the rebuilt prompts must show them too.

    The prompts are rebuilt with today's templates: ``export.json`` ``prompts`` names their version
    (``rebuilt_with``) and the traces' (``traces``, ``unknown`` for records that name none), and
    ``warn`` gets one line when they differ (stderr by default)."""
    today = todays_digest(records)
    note = prompt_version_note(records, today)
    if note:
        warn(f"warning: sft export: {note}")
    if all_splits:
        records = [{**r, "split": "dev" if r.get("split") == "dev" else "train"} for r in records]
    test_families = {r["family"] for r in records if r.get("split") == "test"}
    candidates = [row for rec in records
                  if rec.get("split") in EXPORT_SPLITS and rec["family"] not in test_families
                  for row in verified_conversations(rec, repair_history)]
    if strip_history:
        candidates = [_stripped(row) for row in candidates]
    longest = max((r["tokens"] for r in candidates), default=0)
    chosen = "given" if max_tokens else "auto"
    limit = max_tokens or auto_max_tokens([r["tokens"] for r in candidates])
    by_split: dict[str, list[dict]] = {s: [] for s in EXPORT_SPLITS}
    kinds = {k: {"kept": 0, "too_long": 0} for k in KINDS}
    for row in candidates:
        fits = row["tokens"] <= limit
        kinds[row["kind"]]["kept" if fits else "too_long"] += 1
        if fits:
            by_split[row["split"]].append(row)
    for k in KINDS:
        kinds[k]["lengths"] = _lengths([r["tokens"] for r in candidates if r["kind"] == k])
    out = Path(out_dir)
    for split, rows in by_split.items():
        atomic_write_text(out / f"{split}.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    summary = {**{s: len(rows) for s, rows in by_split.items()}, "max_tokens": limit, "chosen": chosen,
               "longest": longest, "too_long": sum(k["too_long"] for k in kinds.values()), "kinds": kinds,
               "prompts": {"rebuilt_with": today, "traces": sorted({r.get("prompts") or "unknown" for r in records})}}
    atomic_write_json(out / "export.json", summary)
    return summary


def describe(summary: dict) -> str:
    """The log line of an export: rows kept per split and kind, the length and why, what was left out."""
    kinds = summary["kinds"]
    kept = ", ".join(f"{kinds[k]['kept']} {k}" for k in KINDS)
    head = f"{summary['train']} train and {summary['dev']} dev verified conversations ({kept})"
    limit = summary["max_tokens"]
    if summary["chosen"] == "auto":
        return (f"{head}; none left out: train with max_length={limit} (--sft-max-tokens auto: the longest row, "
                f"{summary['longest']} tokens, rounded up to a multiple of {ROUND_TO})")
    if not summary["too_long"]:
        return f"{head}; none longer than {limit} tokens"
    dropped = ", ".join(f"{v['too_long']} of {v['kept'] + v['too_long']} {k}" for k, v in kinds.items()
                        if v["too_long"])
    return (f"{head}; {summary['too_long']} left out for more than {limit} tokens ({dropped}; the longest has "
            f"{summary['longest']}; --sft-max-tokens auto keeps them all)")
