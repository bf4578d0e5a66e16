"""The reviewer-grade study keys of the summary: ``headroom``, ``ceiling``, ``routing``, ``hypotheses``, ``power``.

``study_sections`` is the one call ``experiment.run_experiment`` makes after every policy has been
simulated (and cross-validated): headroom from the traces, routing baselines and metrics for the
dev, test and pooled-CV outcomes in every cost unit, the hypotheses of the study
file (or the built-in default, marked as such) with their family-level tests, and the minimum
detectable effect of every primary test.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.env.cost import unit as cost_unit_of
from controller.study.ceiling import ceiling_table
from controller.study.confidence import confidence_table
from controller.study.confidence_adds import confidence_adds
from controller.study.comparators import dominance, ni_tolerance
from controller.study.deviations import deviations
from controller.study.headroom import headroom_table
from controller.study.hypotheses import (Study, attach_split_seeds, default_study, evaluate_study, load_study,
                                         split_seed_rule)
from controller.env.registry import is_learner, role
from controller.study.null_match import null_matches
from controller.study.power import min_detectable_effect
from controller.study.provenance import study_provenance
from controller.study.routing import routing_table


def outcome_splits(outcomes: Mapping[str, Sequence[Mapping]], cv_pooled: Mapping | None) -> dict:
    """``{split: {policy: outcomes}}`` for dev, test and (with CV) cv_pooled."""
    out = {s: {p: [o for o in outs if o.get("split") == s] for p, outs in outcomes.items()} for s in ("dev", "test")}
    if cv_pooled:
        out["cv_pooled"] = dict(cv_pooled)
    return out


def roles(outcomes: Mapping) -> tuple[list[str], list[str]]:
    """(fixed policies, learned controllers) among the policies that ran; the oracle and shuffled
    controls are neither."""
    fixed = [p for p in outcomes if role(p) == "fixed"]
    learners = [p for p in outcomes if is_learner(p)]
    return fixed, learners


def power_rows(hypotheses: list[dict], routing: Mapping, alpha: float, seed: int) -> list[dict]:
    """The MDE of every primary test, in its own unit (accuracy share or cost per case)."""
    out = []
    for h in hypotheses:
        fams, diffs = h.pop("_families", None), h.pop("_diffs", None)
        if not h["primary"] or not fams:
            continue
        if h["statistic"] in ("cost_saving", "cheaper_no_loss"):
            pts = ((routing.get(h["split"]) or {}).get(h["unit"]) or {}).get("points") or {}
            scale = max([pts[p]["cost"] for p in h["policies"] if p in pts] + [1e-9])
            effect_unit = f"{h['unit']} per case"
        else:
            scale, effect_unit = 0.5, "accuracy (share of cases)"
        mde = min_detectable_effect(fams, diffs, alpha=alpha, scale=scale, seed=seed)
        out.append({"hypothesis": h["name"], "effect_unit": effect_unit, **mde})
        ni = h.get("noninferiority")
        if ni:  # the no-loss part: how many lost cases the exact bound tolerates at n, and its power
            tol = ni_tolerance(ni["n"], ni["margin"], ni.get("alpha", alpha))
            out.append({"hypothesis": f"{h['name']} (no-loss part)", "n_families": len(set(fams)),
                        "effect_unit": f"cases lost of {ni['n']} (exact bound, no win)",
                        "mde": tol["max_losses_tolerated"], "observed_effect": ni["losses"],
                        "kind": "noninferiority", **{k: v for k, v in tol.items() if k != "n"},
                        "note": "largest loss count still passing; power = P(pass) if each case is lost "
                                "independently at rate q: " + ", ".join(f"q={q}: {v:.2f}" for q, v in
                                                                       tol["power_at_loss_rate"].items())})
    for h in hypotheses:
        h.pop("_families", None), h.pop("_diffs", None)
    return out


def study_sections(records: Sequence[Mapping], outcomes: Mapping[str, Sequence[Mapping]], summary: Mapping,
                   *, cv_pooled: Mapping | None = None, split_seed_records: Sequence[Mapping] | None = None,
                   study: str | Study | None = None, cost: str = "generations", seed: int = 0) -> dict:
    """``cv_pooled``: the first split seed's pooled CV outcomes per policy; ``split_seed_records``:
    ``split_seeds.split_seed_outcomes``' list (every split seed)."""
    cv = summary.get("cv") or {}
    by_split = outcome_splits(outcomes, cv_pooled)
    fixed, learners = roles(outcomes)
    direct_tokens = {r["case_id"]: int(r["direct"].get("completion_tokens", 0)) for r in records}
    routing = routing_table(by_split, fixed, learners, direct_tokens=direct_tokens, frontier=summary.get("frontier"),
                            seed=seed)
    if study is None:
        st = default_study(cost, "cv_pooled" if "cv_pooled" in by_split else "test")
    else:
        st = load_study(study) if isinstance(study, str) else study
    hyps = evaluate_study(st, by_split, direct_tokens, fixed, seed)
    ssr = split_seed_records
    attach_split_seeds(hyps, st, by_split, ssr, cv.get("split_seed"), direct_tokens, fixed, seed)
    n_seeds = len(ssr) if ssr else (1 if "cv_pooled" in by_split else 0)
    prov = study_provenance(st.source if study is not None else None)
    return {"headroom": headroom_table(records, summary.get("policy_results"), cv.get("pooled")),
            "ceiling": ceiling_table(records, seed=seed),
            "confidence": confidence_table(records, seed=seed),
            "confidence_adds": confidence_adds(records, by_split, seed=seed),
            "routing": routing,
            "study": {"name": st.name, "source": st.source, "cost_unit": st.cost_unit, "alpha": st.alpha,
                      "split_seed_rule": split_seed_rule(st, n_seeds),
                      # the pipeline adds traces_started_utc from run_config.json and settles the registration
                      **prov},
            "deviations": deviations(st.source if study is not None else None,
                                     (prov.get("study_file_git") or {}).get("commit"), st.name),
            "comparators": {"best_fixed_rule": (summary.get("best_fixed") or {}).get("criterion"),
                            "dominance": dominance(ssr, cost_unit_of(st.cost_unit).field)},
            "power": power_rows(hyps, routing, st.alpha, seed),
            "null_matches": null_matches(by_split),
            "hypotheses": hyps}
