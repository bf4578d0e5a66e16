"""Scoring controller actions with a causal LM: the shared core of LoRA training and inference.

A prompt is the rendered visible state; the model reads ``prompt + "\\nAction:"`` and each valid
action is scored as the summed log-probability of its tokens (``" DIRECT"``, ``" WRITE"``, ...)
as the continuation. The prompt and the action are tokenized separately and concatenated, so
every action of a prompt shares the same prefix ids (no merge across the boundary).

Batches are left-padded with explicit position ids, so a prompt scores the same alone or beside
longer ones (up to float rounding). Only the positions that predict an action token get logits
(transformers' ``logits_to_keep``): the full-vocabulary projection at every position was most of
the memory and time of training on a real base (49,152 x 256 logits per row for SmolLM2).

Scoring modes (``score_mode``):

* ``first_token``: when the actions' first tokens are distinct (the tiny tokenizer learns the four
  words as single tokens; SmolLM2 splits each into two tokens with distinct first ones), the
  log-probability of an action is that of its first token: one row per prompt, one position.
  Under the softmax over valid actions this is an exact classifier over them.
* ``sequence``: each (prompt, action) pair is its own row and the action's tokens are summed; the
  fallback when two actions share a first token.
* ``auto`` (default): ``first_token`` when it applies, else ``sequence``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ACTIONS = ("DIRECT", "WRITE", "FIX", "PROGRAM", "RESAMPLE")
ACTION_CUE = "\nAction:"


def ensure_pad_token(tokenizer: Any) -> None:
    """Give a tokenizer without a pad token one (eos, else unk), as batch scoring needs it."""
    if tokenizer.pad_token_id is None:
        fallback = tokenizer.eos_token or tokenizer.unk_token
        if fallback is None:
            raise ValueError("tokenizer has no pad, eos or unk token to pad batches with")
        tokenizer.pad_token = fallback


def action_token_ids(tokenizer: Any) -> dict[str, list[int]]:
    """Token ids of each action as a continuation (with its leading space)."""
    return {a: tokenizer(" " + a, add_special_tokens=False)["input_ids"] for a in ACTIONS}


def prefix_ids(tokenizer: Any, prompts: Sequence[str], keep: int) -> list[list[int]]:
    """Ids of ``prompt + ACTION_CUE``, cut from the left to the last ``keep`` tokens.

    The cut keeps the end because that is where the state's latest round and the cue are.
    """
    enc = tokenizer([p + ACTION_CUE for p in prompts], add_special_tokens=False)["input_ids"]
    return [ids[-keep:] for ids in enc]


def _left_pad(rows: list[list[int]], pad_id: int, device: Any) -> tuple[Any, Any, Any]:
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
        mask[i, width - len(r):] = 1
    # positions count real tokens only, so left padding does not shift the prompt
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), pos.to(device)


def first_tokens_distinct(act_ids: dict[str, list[int]]) -> bool:
    firsts = [ids[0] for ids in act_ids.values() if ids]
    return len(firsts) == len(act_ids) and len(set(firsts)) == len(firsts)


def resolve_score_mode(mode: str, act_ids: dict[str, list[int]]) -> str:
    if mode == "auto":
        return "first_token" if first_tokens_distinct(act_ids) else "sequence"
    if mode == "first_token" and not first_tokens_distinct(act_ids):
        raise ValueError("score_mode first_token needs actions whose first tokens differ")
    if mode not in ("first_token", "sequence"):
        raise ValueError(f"unknown score_mode {mode!r}: use auto, first_token or sequence")
    return mode


def score_actions(
    model: Any,
    tokenizer: Any,
    act_ids: dict[str, list[int]],
    prompts: Sequence[str],
    valid_actions: Sequence[Sequence[str]],
    max_length: int,
    mode: str = "auto",
    all_logits: bool = False,
) -> list[Any]:
    """Log-probs of each valid action; one 1-D tensor per prompt, in ``valid_actions`` order.

    Differentiable (the caller picks train or inference mode). Raises ValueError on a length
    mismatch, an empty valid set or an unknown action. ``all_logits`` computes the logits at every
    position as the trainer once did (only ``benchmarks/bench_lora.py`` uses it, as the baseline).
    """
    import torch

    if len(prompts) != len(valid_actions):
        raise ValueError(f"{len(prompts)} prompts but {len(valid_actions)} valid-action lists")
    for va in valid_actions:
        if not va or any(a not in act_ids for a in va):
            raise ValueError(f"valid actions {tuple(va)!r} must be a non-empty subset of {ACTIONS}")
    if not prompts:
        return []
    device = next(model.parameters()).device
    mode = resolve_score_mode(mode, act_ids)
    longest = 1 if mode == "first_token" else max(len(act_ids[a]) for va in valid_actions for a in va)
    prefixes = prefix_ids(tokenizer, prompts, max(1, max_length - longest))

    if mode == "first_token":
        # one row per prompt: the last position's distribution scores every action's first token
        ids, mask, pos = _left_pad(prefixes, tokenizer.pad_token_id, device)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos,
                       logits_to_keep=0 if all_logits else 1).logits
        logp = torch.log_softmax(logits[:, -1].float(), dim=-1)
        return [logp[i, [act_ids[a][0] for a in va]] for i, va in enumerate(valid_actions)]

    # one row per (prompt, action); the action's tokens are the row's last tokens
    rows, owners = [], []
    for i, va in enumerate(valid_actions):
        for a in va:
            rows.append(prefixes[i] + act_ids[a])
            owners.append((i, len(act_ids[a])))
    ids, mask, pos = _left_pad(rows, tokenizer.pad_token_id, device)
    # logits at position t predict token t+1: keep the last longest+1 positions, drop the final one
    logits = model(input_ids=ids, attention_mask=mask, position_ids=pos,
                   logits_to_keep=0 if all_logits else longest + 1).logits[:, -(longest + 1):-1].float()
    logp = torch.log_softmax(logits, dim=-1)
    targets = ids[:, -longest:]
    tok_lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # [rows, longest]
    k = torch.tensor([n for _, n in owners], device=device)
    keep = torch.arange(longest, device=device).unsqueeze(0) >= (longest - k).unsqueeze(1)
    row_scores = (tok_lp * keep).sum(-1)
    out, start = [], 0
    for va in valid_actions:
        out.append(row_scores[start:start + len(va)])
        start += len(va)
    return out


def render_tokens_estimate(prompt: str, tokenizer: Any = None) -> int:
    """Tokens the policy reads for one prompt (the prompt plus the action cue).

    Exact with ``tokenizer`` (e.g. ``LoraPolicy.tokenizer``); without one, a model-free estimate
    of one token per 2.5 bytes: the state lines are dense with digits and punctuation, which
    byte-level BPE splits finely, and an estimate should err high rather than low.
    """
    text = prompt + ACTION_CUE
    if tokenizer is not None:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])
    return -(-len(text.encode("utf-8")) * 2 // 5)
