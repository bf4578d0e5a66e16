"""``--export-sft``: verified attempts as chat conversations for supervised fine-tuning.

Writes ``sft/train.jsonl`` and ``sft/dev.jsonl`` in the conversational format TRL's
``SFTTrainer`` reads: one JSON object per line with ``messages`` (a list of ``{"role",
"content"}`` dicts, system/user/assistant, ending with the assistant turn to learn) plus the
extra fields ``case_id``, ``family``, ``split``, ``kind``, ``sample``, ``round``.

A verified trajectory is a direct answer that is right on the new input, or a program chain up
to its first round that passed the public example and is right on the new input; its messages
are the exact prompt of that round (rebuilt by ``tracegen.conversations.round_messages``, so a
repair round carries the earlier code and the feedback the model got) and the stored raw answer.

Leakage: only records of the train and dev splits are exported (test and unassigned are left
out), and a record whose family has any test-split case is left out too, so no test family can
reach the fine-tuning data even from a mislabelled record.
"""
from __future__ import annotations

import json
from pathlib import Path

from tracegen.conversations import direct_conversation, program_chains, round_conversation

from .outputs import atomic_write_text

EXPORT_SPLITS = ("train", "dev")


def verified_conversations(record: dict, repair_history: bool = False) -> list[dict]:
    """Every verified trajectory of one record as an SFT row (split filtering is the caller's)."""
    base = {"case_id": record["case_id"], "family": record["family"], "split": record.get("split")}
    rows = []
    hidden = record.get("hidden") or {}
    if hidden.get("direct_exact") and (record.get("direct") or {}).get("raw"):
        rows.append({"messages": direct_conversation(record), **base, "kind": "direct", "sample": None, "round": None})
    for j, (chain, exact) in enumerate(program_chains(record)):
        for i, rnd in enumerate(chain):
            if rnd.get("visible_pass") and exact[i] and rnd.get("raw"):
                rows.append({"messages": round_conversation(record, chain, i, repair_history), **base,
                             "kind": "program" if i == 0 else "repair", "sample": j, "round": i})
                break
    return rows


def export_sft(records: list[dict], out_dir: str | Path, repair_history: bool = False) -> dict[str, int]:
    """Write ``train.jsonl`` and ``dev.jsonl`` under ``out_dir``; returns rows per file.

    ``repair_history``: the traces were made with ``--repair-history`` (FIX prompts showed every
    earlier attempt), so the rebuilt prompts must show them too."""
    test_families = {r["family"] for r in records if r.get("split") == "test"}
    by_split: dict[str, list[dict]] = {s: [] for s in EXPORT_SPLITS}
    for rec in records:
        if rec.get("split") in by_split and rec["family"] not in test_families:
            by_split[rec["split"]].extend(verified_conversations(rec, repair_history))
    counts = {}
    for split, rows in by_split.items():
        atomic_write_text(Path(out_dir) / f"{split}.jsonl",
                          "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        counts[split] = len(rows)
    return counts
