"""Simulate a policy over recorded traces: each action reveals what the trace recorded for it.

All episodes advance in lockstep so a batched policy (the LoRA scorer) sees one batch per step.
An episode walks the case's tree (``state.Pos``): WRITE reveals sample 0's first program, FIX
the latest sample's next repair round, RESAMPLE the next independent sample's first program.
An outcome holds the committed answer's correctness (read from ``hidden`` only after the policy
has committed; PROGRAM commits what ``state.commit_choice`` picks, PROGRAM:j sample j) and the tool budget the
actions spent: program rounds generated (over all samples), repairs, resamples, generated tokens,
search nodes of the revealed program attempts, and sandbox time.
"""
from __future__ import annotations

from typing import Sequence

from controller.env.cost import UNITS
from controller.env.oracle import committed_correct, next_pos, revealed_round
from controller.env.state import State, chains, commit_choice, committed_sample_of, is_commit, shared_view, visible_state


class InvalidAction(RuntimeError):
    pass


def revealed_rounds(rec: dict, pos: tuple) -> list[dict]:
    """Every program round revealed at ``pos``, sample by sample."""
    chs = chains(rec)
    return [r for j, n in enumerate(pos) for r in chs[j][0][:n]]


def _outcome(policy_name: str, rec: dict, actions: list[str], pos: tuple, source: str) -> dict:
    hidden = rec["hidden"]
    committed = None
    if source == "direct":
        correct = hidden["direct_exact"]
    else:
        chosen = committed_sample_of(actions[-1])  # PROGRAM:j, else None (the commit rule)
        committed = commit_choice(shared_view(rec, pos)) if chosen is None else chosen
        correct = committed_correct(rec, pos, sample=committed)
    rounds = revealed_rounds(rec, pos)
    costs = {u.field: u.outcome(rec, rounds) for u in UNITS.values()}  # every registered cost unit's field
    out = {
        "policy": policy_name, "split": rec["split"], "case_id": rec["case_id"], "family": rec["family"],
        "actions": actions, "source": source, "correct": correct,
        "direct_correct": hidden["direct_exact"],
        "program_generations": None,  # None: a cost unit's field, filled from ``costs`` below in its place
        "repair_actions": actions.count("FIX"),
        "resample_actions": actions.count("RESAMPLE"),
        "committed_sample": committed,
        "generated_tokens": None, "work": None,
        "search_nodes": sum(int(r.get("search_nodes", 0)) for r in rounds),
        "sandbox_ms": round(sum(r["visible"]["wall_ms"] + r["test"]["wall_ms"] for r in rounds), 3),
    }
    out.update(costs)
    return out


def memo_state(rec: dict, pos: tuple, memo: dict | None) -> State:
    """``visible_state(rec, pos)``, kept in ``memo`` under (id(rec), pos) when a memo is given."""
    if memo is None:
        return visible_state(rec, pos)
    key = (id(rec), pos)
    if key not in memo:
        memo[key] = visible_state(rec, pos)
    return memo[key]


def simulate(policy, records: Sequence[dict], *, states_out: list | None = None,
             memo: dict | None = None) -> list[dict]:
    """Run ``policy`` on every record; return one outcome per record, in order.

    When ``states_out`` is a list, every visited (record, State) pair is appended to it
    (DAgger aggregates these). ``memo`` (a dict the caller keeps while its records live) reuses
    each (record, position)'s State across simulations: many policies visit the same states.
    """
    episodes = [{"rec": r, "pos": (), "actions": [], "done": None} for r in records]
    active = list(range(len(episodes)))
    while active:
        states: list[State] = [memo_state(episodes[i]["rec"], episodes[i]["pos"], memo) for i in active]
        if states_out is not None:
            states_out.extend((episodes[i]["rec"], s) for i, s in zip(active, states))
        acts = policy.act(states)
        still = []
        for i, s, a in zip(active, states, acts):
            ep = episodes[i]
            if a not in s.valid_actions:
                raise InvalidAction(f"{policy.name} chose {a} at {s.case_id} step {s.revealed} {s.pos}; "
                                    f"valid: {s.valid_actions}")
            ep["actions"].append(a)
            if a == "DIRECT":
                ep["done"] = "direct"
            elif is_commit(a):
                ep["done"] = "program"
            else:
                nxt = next_pos(ep["pos"], a)
                if revealed_round(ep["rec"], nxt) is None:
                    raise InvalidAction(f"trace of {s.case_id} holds no program round for {a} at {s.pos}")
                ep["pos"] = nxt
                still.append(i)
        active = still
    return [_outcome(policy.name, e["rec"], e["actions"], e["pos"], e["done"]) for e in episodes]
