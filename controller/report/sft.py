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
``tests/controller/test_sft_export.py`` checks this with TRL's own dataset preparation; docs/sft.md has the
training snippet.

``tokens`` is the length of prompt plus completion as the traced backend counted it (its
tokenizer and chat template for hf, vllm and openai; an estimate for synth). ``max_tokens``
(``--sft-max-tokens``) leaves out longer rows, which TRL would otherwise truncate from the end,
cutting off the answer; the count left out is returned.

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

from controller.report.outputs import atomic_write_text

EXPORT_SPLITS = ("train", "dev")


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


def export_sft(records: list[dict], out_dir: str | Path, repair_history: bool = False,
               max_tokens: int | None = None) -> dict[str, int]:
    """Write ``train.jsonl`` and ``dev.jsonl`` under ``out_dir``; returns rows per file and, as
    ``too_long``, the rows left out for having more than ``max_tokens`` tokens (None: no limit).

    ``repair_history``: the traces were made with ``--repair-history`` (FIX prompts showed every
    earlier attempt), so the rebuilt prompts must show them too."""
    test_families = {r["family"] for r in records if r.get("split") == "test"}
    by_split: dict[str, list[dict]] = {s: [] for s in EXPORT_SPLITS}
    too_long = 0
    for rec in records:
        if rec.get("split") in by_split and rec["family"] not in test_families:
            for row in verified_conversations(rec, repair_history):
                if max_tokens and row["tokens"] > max_tokens:
                    too_long += 1
                else:
                    by_split[rec["split"]].append(row)
    counts = {}
    for split, rows in by_split.items():
        atomic_write_text(Path(out_dir) / f"{split}.jsonl",
                          "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        counts[split] = len(rows)
    return {**counts, "too_long": too_long}
