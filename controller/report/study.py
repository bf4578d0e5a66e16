"""The report's opening sections: headroom, the study's hypotheses, power, routing.

Each function takes a ``final_summary.json``-shaped dict and returns markdown lines (none when its
key is missing), so ``report.render_report`` opens with what the data can answer before any
learned result.
"""
from __future__ import annotations

from typing import Mapping

from controller.env.cost import UNITS
from controller.report.fmt import fixed, interval, p_value, table, which_test_decides
from controller.study.headroom import CELL_TEXT, CELLS
from controller.study.provenance import registration_words

UNIT_TEXT = {u.name: u.text for u in UNITS.values()}  # the built-in units (the report reads UNITS)


def headroom_md(s: Mapping) -> list[str]:
    h = s.get("headroom")
    if not h:
        return []
    cells = h.get("cells") or {}
    k = max((c.get("k", 1) for c in cells.values()), default=1)
    heads = ["Split", "Scored", "Families"] + [CELL_TEXT[c] for c in CELLS]
    if k > 1:
        heads.append("passing sample right, commit wrong")
    heads.append("oracle - always-tool (exact; pooled: CV)")
    rows = []
    for split in ("train", "dev", "test", "pooled"):
        c = cells.get(split)
        if not c:
            continue
        gaps = h.get("gap") or {}
        gap = gaps.get(split) or (gaps.get("cv_pooled") if split == "pooled" else None)
        row = [split, c["n"], c["families"]] + [c[x] for x in CELLS]
        if k > 1:
            row.append(c["passing_right_commit_wrong"])
        row.append("n/a" if gap is None else gap["accuracy_gap"])
        rows.append(row)
    cvg = (h.get("gap") or {}).get("cv_pooled")
    out = ["## What the data can answer (headroom)", ""] + [f"- {q}" for q in h.get("questions", [])] + [""]
    out += ["Outcome cells over scored cases, every recorded program revealed and committed by the fixed "
            "commit rule (computed before any learning):", ""] + table(heads, rows)
    if cvg:
        out += [f"Pooled cross-validation: hindsight oracle {cvg['oracle_exact']} vs always-tool "
                f"{cvg['best_fixed_exact']} exact; the oracle spends {cvg['oracle_generations']} program generations, "
                f"always-tool {cvg['best_fixed_generations']}.", ""]
    return out


def estimate_text(h: Mapping) -> str:
    """A hypothesis's estimate with its 95% interval, in the words of its statistic."""
    est = h.get("estimate")
    if h["statistic"] == "cheaper_no_loss" and est is not None:
        ni = h.get("noninferiority") or {}
        return (f"saves {fixed(est)} {h['unit']}/case {interval(h.get('interval'))}; accuracy "
                f"{fixed(h.get('accuracy_diff'))} ({ni.get('wins', 'n/a')} won, {ni.get('losses', 'n/a')} lost), "
                f"exact lower bound {fixed(ni.get('lower_bound'))} vs margin -{fixed(h.get('margin'))} "
                f"(family bootstrap {interval(h.get('accuracy_interval'))}, for information)")
    if h["statistic"] == "beats_random_mix" and est is not None:
        return (f"{h.get('learner_exact')} vs {fixed(h.get('mix_expected_exact'), 1)} expected "
                f"({' + '.join(h.get('mix', []))}, w={fixed(h.get('w'), 2)}); {fixed(est)} {interval(h.get('interval'))}")
    return f"{fixed(est)} {interval(h.get('interval'))}"


def hypotheses_md(s: Mapping) -> list[str]:
    hyps = s.get("hypotheses")
    if not hyps:
        return []
    st = s.get("study") or {}
    reg = registration_words(st)
    out = ["## Pre-registered hypotheses" if st.get("pre_registered") else "## Study hypotheses", "",
           f"Study `{st.get('name', 'n/a')}`, {reg}; cost unit: {st.get('cost_unit', 'n/a')}; alpha "
           f"{st.get('alpha', 0.05)}. Primaries are tested first. Every test is a family-level sign-flip "
           "test on per-case differences summed per family; Holm runs over distinct tests only, primaries "
           "and secondaries as separate families (identical per-family difference vectors are one test; the "
           "oracle and ties by construction are left out, with the reason). Non-inferiority (`cheaper_no_loss`) "
           "is decided by an exact binomial lower bound of the accuracy difference (Clopper-Pearson bound of "
           "the win share minus that of the loss share, each at alpha/2), not by the bootstrap, which is "
           "anti-conservative when losses are rare.", ""]
    rows = []
    for h in hyps:
        note = "; ".join(x for x in (h.get("excluded", ""), ("same test as " + ", ".join(h["merged_with"]))
                                     if h.get("merged_with") else "") if x)
        if h["statistic"] != "cheaper_no_loss":  # there the estimate text names the exact bound that decides
            note = "; ".join(x for x in (note, which_test_decides(h.get("interval"), h.get("verdict"), h.get("p_family"),
                                                                   h.get("p_holm"), h.get("n_families")).strip(" ()")) if x)
        est_txt = estimate_text(h)
        rows.append([f"`{h['name']}`", "primary" if h["primary"] else "secondary", h["statistic"],
                     ", ".join(f"`{p}`" for p in h["policies"]), h["split"], h["unit"], h.get("n_families", "n/a"),
                     est_txt, p_value(h.get("p_family")), p_value(h.get("p_holm")), _split_seed_cell(h), h["verdict"], note])
    rule = st.get("split_seed_rule") or {}
    tail = ([f"Estimates and p-values are those of the first split seed; a cross-validated hypothesis is "
             f"re-tested at every split seed (Holm within each) and its verdict follows the rule: {rule['rule']}.", ""]
            if rule.get("rule") and rule.get("of") else [])
    return out + table(["Hypothesis", "Role", "Statistic", "Policies", "Split", "Unit", "Families", "Estimate [95% CI]",
                         "p (family)", "p (Holm)", "Split seeds (verdict per seed)", "Verdict", "Notes"], rows) + tail


def _split_seed_cell(h: Mapping) -> str:
    per = h.get("per_split_seed")
    if not per:
        return "n/a"
    return f"{h.get('supported_at')}: " + ", ".join(f"{e['split_seed']}: {e['verdict'].split(' (')[0]}" for e in per)


def power_md(s: Mapping) -> list[str]:
    rows = []
    for p in s.get("power") or []:
        mde = p.get("mde")
        rows.append([f"`{p['hypothesis']}`", p["n_families"], p["effect_unit"],
                     ("even 0 lost fails" if p.get("kind") == "noninferiority" else "not detectable") if mde is None
                     else (str(mde) if p.get("kind") == "noninferiority" else fixed(mde)), fixed(p.get("observed_effect")),
                     "n/a" if p.get("min_attainable_p") is None else
                     f"{p['min_attainable_p']:.2g}" + (f" ({p['test_method']})" if p.get("test_method") else ""),
                     p.get("note", "")])
    if not rows:
        return []
    return ["## Power of the primary tests", "",
            "Minimum detectable effect (per case) of each primary test with the families at hand, at 80% power "
            "and the test's alpha, by simulation: families resampled with their observed spread around the "
            "mean, random signs (the null), plus an effect per case; the same sign-flip test. A null result "
            "rules out only effects at least this large.", ""] + table(
        ["Hypothesis", "Families", "Effect unit", "MDE (80% power)", "Observed",
         "Smallest attainable p (all families differ)", "Note"], rows)


def routing_md(s: Mapping) -> list[str]:
    r = s.get("routing")
    if not r:
        return []
    rows = []
    for split in ("test", "cv_pooled", "dev"):
        for unit, block in (r.get(split) or {}).items():
            for name, L in (block.get("learners") or {}).items():
                hull = L.get("hull") or {}
                td = next((m for m in L.get("mixes", []) if {m["a"], m["b"]} == {r["weak"], r["strong"]}), None)
                fr = L.get("frontier") or {}
                rows.append([split, unit, f"`{name}`", fixed(L["cost"]), fixed(L["accuracy"]),
                             "n/a" if not td else f"{fixed(td['expected_exact'], 1)} (p {p_value(td['p_family'])})",
                             "n/a" if not hull else f"{'+'.join(dict.fromkeys((hull['a'], hull['b'])))}: {fixed(hull['expected_exact'], 1)} "
                                                    f"(p {p_value(hull['p_family'])})",
                             L["exact"], _apgr_cell(L), fixed(fr.get("apgr_interpolated")), fixed(fr.get("cpt50")),
                             fixed(fr.get("cpt80")), _gap_cell(L)])
    if not rows:
        return []
    hull_txt = []
    for split in ("test", "cv_pooled"):
        for unit, block in (r.get(split) or {}).items():
            hull_txt.append(f"{split}/{unit}: " + " -> ".join(f"`{h['policy']}` ({fixed(h['cost'], 2)}, "
                                                              f"{fixed(h['accuracy'])})" for h in block.get("hull", [])))
    return ["## Routing baselines (every cost unit)", "",
            f"Per scored case. Random mixing runs the stronger of two fixed policies with probability w chosen so "
            f"its expected cost equals the learner's; the learner is tested against it at the family level "
            f"(sign-flip). The hull is the best such mix of any two fixed policies. APGR (RouteLLM's estimator): "
            f"at 10 cost budgets evenly spaced between `{r['weak']}` and `{r['strong']}` (shares 0.1 ... 1.0), the "
            f"best performance gap recovered by an operating point at or below the budget, averaged. The random router's "
            f"{r['random_router_apgr']} spans all ten budgets while one operating point earns credit only above its "
            f"cost, so the learner's APGR is shown beside the same estimator over the random mix of the two references "
            f"and over the fixed-policy hull taken at the learner's own cost (learner / random mix / hull), and again "
            f"over its whole lambda sweep where there is one (sweep points were picked on the split they are scored "
            f"on). No interval: APGR is a step function of cost, so its bootstrap percentiles are no confidence "
            f"interval (their spread is in `final_summary.json`). APGR (interpolated): the older trapezoid through the sweep "
            f"anchored at (0, 0) and (1, 1) (random router {r.get('random_router_apgr_interpolated', 0.5)}). "
            "CPT(50%/80%): share of the strong reference's extra cost needed to recover 50%/80% of the gap. "
            "Cost-gap recovered, at matched accuracy only: (always-tool cost - c) / (always-tool cost - oracle "
            "cost), c the cheapest operating point of the learner (itself or a sweep point) at least as accurate "
            "as always-tool, with a family-bootstrap interval; n/a with the reason when none is. Units: "
            + "; ".join(f"{u.name}: {u.text}" for u in UNITS.values()) + ".", ""] + table(
        ["Split", "Unit", "Learner", "Cost", "Accuracy", f"Mix {r['weak']}+{r['strong']} expected exact (p)",
         "Hull mix expected exact (p)", "Learner exact", "APGR (RouteLLM) learner / random mix / hull at its cost; sweep",
         "APGR (interpolated)", "CPT(50%)", "CPT(80%)", "Cost-gap recovered at matched accuracy [CI]"],
        rows) + ["Fixed-policy hull (cost, accuracy): " + "; ".join(hull_txt), ""]


def _apgr_cell(L: Mapping) -> str:
    """Learner vs random mix vs hull, all at the learner's costs; the same for the whole sweep."""
    a = L.get("apgr") or {}

    def three(m: Mapping | None) -> str:
        m = m or {}
        return " / ".join(fixed(m.get(k)) for k in ("learner", "random_mix", "hull"))

    txt = three(a.get("matched") or {"learner": (a.get("learner") or {}).get("value")})
    if (a.get("frontier") or {}).get("matched"):
        txt += f"; sweep {three(a['frontier']['matched'])}"
    return txt


def _gap_cell(L: Mapping) -> str:
    m = L.get("cost_gap_recovered_matched")
    if not m:
        return "n/a"
    if m.get("value") is None:
        return f"n/a ({m.get('reason', 'undefined')})"
    where = ("" if m.get("operating_point") == "learner"
             else f" (at a {m.get('operating_point')} point selected on this split)")
    return f"{fixed(m['value'])} {interval(m.get('ci95_family'))}{where}".strip()


STUDY_SECTIONS = (headroom_md, hypotheses_md, power_md, routing_md)
