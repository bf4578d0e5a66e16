"""Simulate a policy over recorded traces: each action reveals what the trace recorded for it.

All episodes advance in lockstep so a batched policy (the LoRA scorer) sees one batch per step.
An outcome holds the committed answer's correctness (read from ``hidden`` only after the policy
has committed) and the tool budget the actions spent.
"""
from __future__ import annotations

from typing import Sequence

from .cost import round_work
from .state import State, visible_state


class InvalidAction(RuntimeError):
    pass


def _outcome(policy_name: str, rec: dict, actions: list[str], k: int, source: str) -> dict:
    hidden = rec["hidden"]
    if source == "direct":
        correct = hidden["direct_exact"]
    else:
        correct = hidden["rounds"][k - 1]["hidden_exact"]
    rounds = rec["rounds"][:k]
    return {
        "policy": policy_name, "split": rec["split"], "case_id": rec["case_id"], "family": rec["family"],
        "actions": actions, "source": source, "correct": correct,
        "direct_correct": hidden["direct_exact"],
        "program_generations": k,
        "repair_actions": actions.count("FIX"),
        "generated_tokens": rec["direct"]["completion_tokens"] + sum(r["completion_tokens"] for r in rounds),
        "work": sum(round_work(rec, r) for r in rounds),
        "sandbox_ms": round(sum(r["visible"]["wall_ms"] + r["test"]["wall_ms"] for r in rounds), 3),
    }


def simulate(policy, records: Sequence[dict], *, states_out: list | None = None) -> list[dict]:
    """Run ``policy`` on every record; return one outcome per record, in order.

    When ``states_out`` is a list, every visited (record, State) pair is appended to it
    (DAgger aggregates these).
    """
    episodes = [{"rec": r, "k": 0, "actions": [], "done": None} for r in records]
    active = list(range(len(episodes)))
    while active:
        states: list[State] = [visible_state(episodes[i]["rec"], episodes[i]["k"]) for i in active]
        if states_out is not None:
            states_out.extend((episodes[i]["rec"], s) for i, s in zip(active, states))
        acts = policy.act(states)
        still = []
        for i, s, a in zip(active, states, acts):
            ep = episodes[i]
            if a not in s.valid_actions:
                raise InvalidAction(f"{policy.name} chose {a} at {s.case_id} step {s.revealed}; valid: {s.valid_actions}")
            ep["actions"].append(a)
            if a == "DIRECT":
                ep["done"] = "direct"
            elif a == "PROGRAM":
                ep["done"] = "program"
            else:
                if ep["k"] >= len(ep["rec"]["rounds"]):
                    raise InvalidAction(f"trace of {s.case_id} holds no program round {ep['k']}")
                ep["k"] += 1
                still.append(i)
        active = still
    return [_outcome(policy.name, e["rec"], e["actions"], e["k"], e["done"]) for e in episodes]
