"""The report's first screen: the answer, before any long table.

What the traces can answer (headroom), the best fixed policy (chosen on train + dev), whether any
learner beats it at equal accuracy across split seeds, the registered primary verdicts, the cost
figure that matters (cost-gap recovered at matched accuracy) and where a learner's saving comes
from. Reads the summary only; every number is also in ``final_summary.json``.
"""
from __future__ import annotations

from typing import Mapping

from controller.env.registry import BEST_FIXED, ORACLE, ordered, role
from controller.report.study import estimate_text
from controller.study.null_match import null_words
from controller.study.provenance import primaries_heading

LEAD = ("direct_only", "always_tool_visible", BEST_FIXED)


def _pool(s: Mapping) -> tuple[str, dict]:
    """(where, per-policy results) of the study's main comparison: pooled CV, else test."""
    pooled = (s.get("cv") or {}).get("pooled")
    if pooled:
        return "pooled cross-validation", pooled
    return "held-out test", {p: r["test"] for p, r in (s.get("policy_results") or {}).items() if "test" in r}


def _row(name: str, r: Mapping) -> str:
    return f"| `{name}` | {r.get('exact')}/{r.get('n')} | {r.get('program_generations')} |"


def _learners(res: Mapping) -> list[str]:
    """The learned controllers that ran (registry role ``learned``), in report order."""
    return [p for p in ordered(res) if role(p) == "learned"]


def _spread(diff: Mapping, field: str, unit: str) -> str:
    d = diff.get(field) or {}
    if d.get("mean") is None:
        return "n/a"
    h = d.get("holds_at") or {}
    rng = f"{d['min']:+.1f} to {d['max']:+.1f}" if d["min"] != d["max"] else f"{d['min']:+.1f}"
    return f"{rng} {unit} (higher at {h.get('higher')}, equal {h.get('equal')}, lower {h.get('lower')} of {h.get('of')})"


def plane_md(s: Mapping, learners: list[str]) -> list[str]:
    """The headline on the accuracy-cost plane: each learner against the best random mix of two
    fixed policies at its own cost (the hull), with the family interval and test."""
    r = s.get("routing") or {}
    split = "cv_pooled" if r.get("cv_pooled") else "test"
    block = (r.get(split) or {}).get("generations") or {}
    rows = []
    for name in learners:
        L = (block.get("learners") or {}).get(name) or {}
        h = L.get("hull")
        if not h or h.get("diff") is None:
            continue
        pair = " + ".join(f"`{p}`" for p in dict.fromkeys((h["a"], h["b"])))
        ci = h.get("diff_ci95_family") or [None, None]
        lo, hi = ("n/a" if v is None else f"{100 * v:+.1f}" for v in ci)
        rows.append(f"| `{name}` | {L['cost']:.3f} | {h['learner_exact']}/{h['n']} | {h['expected_exact']:.1f} "
                    f"({pair}, w = {h['w']:.2f}) | {100 * h['diff']:+.1f} pp [{lo}, {hi}] | {h['p_family']:.3g} |")
    if not rows:
        return []
    return [f"**On the accuracy-cost plane** ({split.replace('_', ' ')}, program generations per case): each learner "
            "against the fixed-policy hull at its own cost, i.e. the best random mix of two fixed policies that "
            "spends what the learner spends (family-bootstrap interval of the difference; family sign-flip p):", "",
            "| learner | cost | right | hull expects | difference | p (family) |", "|---|---|---|---|---|---|",
            *rows, ""]


def answer_md(s: Mapping) -> list[str]:
    where, res = _pool(s)
    if not res:
        return []
    out = ["## The answer", ""]
    for q in (s.get("headroom") or {}).get("questions", [])[:1]:
        out += [f"**What the data can answer.** {q}", ""]
    bf = s.get("best_fixed") or {}
    folds = [f.get("best_fixed") for f in (s.get("cv") or {}).get("folds", []) if f.get("best_fixed")]
    if bf.get("chosen"):
        picks = ("; in cross-validation each fold chose on its own train + dev: "
                 + ", ".join(f"`{c}` ({folds.count(c)} of {len(folds)} folds)" for c in dict.fromkeys(folds))
                 if folds else "")
        rule = bf.get("criterion") or "chosen on train + dev"
        out += [f"**The best fixed policy** (every repair budget and visible rule; {rule}): `{bf['chosen']}`{picks}.",
                ""]
    names = [p for p in (*LEAD, *_learners(res), ORACLE) if p in res]
    scope = "every scored case once" if where.startswith("pooled") else "the held-out families' scored cases"
    out += [f"Results over {where} ({scope}):", "",
            "| policy | right | program generations |", "|---|---|---|", *[_row(p, res[p]) for p in names], ""]
    out += [f"**Null.** {w}" for w in null_words(s.get("null_matches") or {})]
    out += [""] if null_words(s.get("null_matches") or {}) else []
    out += plane_md(s, _learners(res))
    diffs = (s.get("split_seeds") or {}).get("differences") or {}
    rows = []
    for learner in _learners(res):
        d = (diffs.get(learner) or {}).get(BEST_FIXED)
        if d:
            rows.append(f"| `{learner}` | {_spread(d, 'accuracy_pp', 'pp')} | "
                        f"{_spread(d, 'program_generations', 'generations')} |")
    if rows:
        n = (s.get("split_seeds") or {}).get("n_split_seeds")
        out += [f"**Learners against the best fixed policy over {n} split seeds** (learner minus best fixed, "
                "pooled totals; negative generations = cheaper):", "",
                "| learner | accuracy | program generations |", "|---|---|---|", *rows, ""]
    prim = [h for h in s.get("hypotheses") or [] if h.get("primary")]
    if prim:
        out += [f"**{primaries_heading(s.get('study') or {})}:**", ""]
        for h in prim:
            seeds = f", supported at {h['supported_at']} split seeds" if h.get("supported_at") else ""
            out.append(f"- `{h['name']}` ({', '.join(h.get('policies', []))}; {h.get('split')}): "
                       f"**{h.get('verdict')}**{seeds}; {estimate_text(h)}.")
        out.append("")
    sav = ((s.get("savings") or {}).get("cv_pooled") or (s.get("savings") or {}).get("test") or {})
    for learner in [p for p in _learners(res) if p in sav][:2]:
        parts = [f"{k.replace('_', ' ')}: {v['cases']} cases, {v['generations_saved']:+d} generations saved, "
                 f"{v['right_lost']} right lost, {v['right_gained']} gained"
                 for k, v in sav[learner].items() if k != "same"]
        if parts:
            out += [f"**Where `{learner}` saves against always-tool:** " + "; ".join(parts) + ".", ""]
    return out


def savings_md(s: Mapping) -> list[str]:
    """Every policy's departures from always-tool, by category (``summary["savings"]``)."""
    sav = s.get("savings") or {}
    split = "cv_pooled" if "cv_pooled" in sav else "test" if "test" in sav else None
    if not split:
        return []
    cats = sorted({c for rows in sav[split].values() for c in rows if c != "same"})
    if not cats:
        return []
    out = [f"## Where the savings come from ({split.replace('_', ' ')})", "",
           "Each case is put where the policy first leaves always-tool's path; per category: cases / "
           "program generations saved / right answers lost / gained.", "",
           "| policy | " + " | ".join(c.replace("_", " ") for c in cats) + " |", "|---|" + "---|" * len(cats)]
    for pol, rows in sav[split].items():
        cells = [f"{r['cases']} / {r['generations_saved']:+d} / {r['right_lost']} / {r['right_gained']}"
                 if (r := rows.get(c)) else "" for c in cats]
        if any(cells):
            out.append(f"| `{pol}` | " + " | ".join(cells) + " |")
    return out + [""]


def repair_rounds_md(s: Mapping) -> list[str]:
    rows = s.get("repair_rounds") or []
    if not rows:
        return []
    out = ["## Repair rounds", "", "How often repair r of a chain (the program still failing after r - 1 "
           "repairs) passes the public example, and how often it passes and is right (a round that fails the example "
           "is never committed):", "",
           "| repair | chains reaching it | pass the example | pass and right (committable) | right on the hidden "
           "answer, passing or not (not committable unless it passes) |", "|---|---|---|---|---|"]
    for r in rows:
        rate = "n/a" if r["pass_rate"] is None else f"{100 * r['pass_rate']:.0f}%"
        out.append(f"| {r['repair']} | {r['reached']} | {r['passed']} ({rate}) | {r.get('passed_right', 'n/a')} | "
                   f"{r['right']} |")
    return out + [""]
