"""Hand-built trace records with known answers, for controller tests."""
from __future__ import annotations

EX_IN = [["Ann", "3"], ["Bob", "4"]]
EX_OUT = [["Ann"], ["Bob"]]
TEST_IN = [["Cy", "5"], ["Di", "6"], ["Ed", "7"]]
ANSWER = [["Cy"], ["Di"], ["Ed"]]
WRONG = [["Cy", "5"], ["Di", "6"], ["Ed", "7"]]


def _run(ok=True, error=None, output=None, ms=2.0, with_output=True):
    d = {"ok": ok, "error": error, "message": "" if ok else f"{error}", "wall_ms": ms}
    if with_output:
        d["output"] = output
    return d


def make_record(case_id="fam_a/fam_a_1", family="fam_a", split="test", *, direct=WRONG, rounds=(),
                max_repairs=2, answer=ANSWER, direct_tokens=10, round_tokens=50):
    """``rounds``: a sequence of (visible_pass, test_output) pairs; hidden grades follow from ``answer``."""
    recs = []
    for i, (vp, out) in enumerate(rounds):
        recs.append({
            "round": i, "kind": "write" if i == 0 else "fix", "raw": f"```python\n# round {i}\n```",
            "code": f"def transform(table):\n    return table  # {i}", "parse": {"status": "ok", "detail": ""},
            "visible": _run(output=EX_OUT if vp else EX_IN) if vp else _run(False, "wrong_output", EX_IN),
            "visible_pass": vp, "test": _run(out is not None, None if out is not None else "exception", with_output=False),
            "test_output": out, "prompt_tokens": 100, "completion_tokens": round_tokens, "gen_ms": 5.0,
            "finish_reason": "stop",
        })
    for r in recs:
        if r["visible"]["ok"] is False:
            r["visible"]["message"] = "output differs from the public example"
    return {
        "schema_version": 2, "case_id": case_id, "family": family, "split": split, "backend": "synth",
        "model": "synth", "max_repairs": max_repairs,
        "task": {"input_table": EX_IN, "output_table": EX_OUT, "test_table": TEST_IN},
        "direct": {"raw": "[]", "table": direct, "parse": {"status": "ok" if direct is not None else "failed",
                                                            "detail": ""},
                   "prompt_tokens": 80, "completion_tokens": direct_tokens, "gen_ms": 3.0, "finish_reason": "stop"},
        "rounds": recs,
        "totals": {"prompt_tokens": 80 + 100 * len(recs), "completion_tokens": direct_tokens + round_tokens * len(recs),
                   "gen_ms": 3.0 + 5.0 * len(recs), "sandbox_ms": 4.0 * len(recs)},
        "hidden": {"answer": answer,
                   "direct_exact": None if answer is None else direct == answer,
                   "rounds": [{"hidden_exact": None if answer is None else out == answer} for _, out in rounds]},
    }


def make_tree_record(case_id="fam_t/fam_t_1", family="fam_t", split="train", *, direct=WRONG, chains=(),
                     max_repairs=2, answer=ANSWER, **kw):
    """A schema-v2 record with K = len(chains) program samples; ``chains[j]`` is sample j's rounds as
    (visible_pass, test_output) pairs (its WRITE, then its FIX rounds)."""
    rec = make_record(case_id, family, split, direct=direct, rounds=chains[0], max_repairs=max_repairs,
                      answer=answer, **kw)
    rec["schema_version"] = 2
    extra = [make_record(case_id, family, split, direct=direct, rounds=ch, max_repairs=max_repairs, answer=answer, **kw)
             for ch in chains[1:]]
    if extra:
        rec["samples"] = [e["rounds"] for e in extra]
        rec["hidden"]["samples"] = [e["hidden"]["rounds"] for e in extra]
    return rec


class ScriptedPolicy:
    """A policy that takes ``actions[k]`` at the state that has revealed k program rounds (every
    action before the last reveals one round, so ``revealed`` is the step)."""

    name = "fixed"

    def __init__(self, actions):
        self.actions = actions

    def act(self, states):
        return [self.actions[s.revealed] for s in states]


def foofah_one_per_family() -> list[dict]:
    """The first committed Foofah trace record of every family (results/foofah/fresh_traces.jsonl.gz)."""
    import gzip
    import json
    from pathlib import Path

    seen, out = set(), []
    path = Path(__file__).resolve().parents[1] / "results" / "foofah" / "fresh_traces.jsonl.gz"
    for line in gzip.decompress(path.read_bytes()).decode().splitlines():
        r = json.loads(line) if line.strip() else None
        if r and r["family"] not in seen:
            seen.add(r["family"])
            out.append(r)
    return out


# ---- traces where only the model's confidence tells right from wrong (controller/env/confidence.py)

CONF_DIRECT = [["Cy", "x"], ["Di", "x"], ["Ed", "x"]]  # what every direct answer says
CONF_PROGRAM = [["Cy", "y"], ["Di", "y"], ["Ed", "y"]]  # what every (passing) program says on the new input


def confidence_record(i, fam, split, confident):
    """Confident: the direct answer is right and the program wrong; else the reverse. Every visible
    feature is the same in both kinds except the direct answer's log-probability."""
    rec = make_record(f"{fam}/{i}", fam, split, direct=CONF_DIRECT, rounds=[(True, CONF_PROGRAM)],
                      answer=CONF_DIRECT if confident else CONF_PROGRAM)
    rec["schema_version"] = 3
    jitter = 0.01 * (i % 3)
    mean = -0.1 - jitter if confident else -2.0 - jitter
    rec["direct"]["logprobs"] = {"mean": mean, "min": mean - 1, "sum": mean * 6, "tokens": 6, "source": "hf"}
    rec["rounds"][0]["logprobs"] = {"mean": -0.5, "min": -1.5, "sum": -3.0, "tokens": 6, "source": "hf"}
    return rec


def confidence_traces():
    """12 families of 4 cases (6 train, 3 dev, 3 test), half of each family confident."""
    recs = []
    for f in range(12):
        split = "train" if f < 6 else "dev" if f < 9 else "test"
        recs += [confidence_record(i, f"fam{f}", split, confident=i % 2 == 0) for i in range(4)]
    return recs
