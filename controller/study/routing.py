"""Routing baselines and metrics in every cost unit: random mixing, the fixed-policy hull, APGR, CPT.

A controller is a router between cheap and expensive behaviour, so it is judged the way routers
are (RouteLLM, Ong et al. 2024), in each cost unit a run counts:

* ``generations``: program rounds per case; ``tokens``: thousand completion tokens of program
  rounds per case (the direct answer is drawn by every policy, so it is not tool cost);
  ``work``: thousand search nodes (synth) or completion tokens (models) per case.
  Every per-case mean is over *scored* cases only.
* **Random mixing** of two fixed policies a (cheaper) and b: per case, run b with probability w,
  else a. Its expected cost and accuracy are the straight line between the two points; at the
  learner's cost, w = (cost_L - cost_a) / (cost_b - cost_a). The learner is tested against it
  at the family level: per case d = right_L - ((1 - w) right_a + w right_b), summed per family,
  sign-flip test (``stats.family_sign_flip_p``).
* **Hull**: the upper concave frontier of the fixed policies' (cost, accuracy) points, i.e. the
  best accuracy random mixing of any two fixed policies buys at each cost.
* **PGR / APGR / CPT**: with the cheap reference W (``direct_only``) and the strong one S
  (``always_tool_visible``), a point's cost share is x = (cost - cost_W) / (cost_S - cost_W)
  and its performance gap recovered PGR = (acc - acc_W) / (acc_S - acc_W). **APGR is RouteLLM's
  estimator** (``routellm_apgr``): 10 cost budgets at shares 0.1, 0.2, ..., 1.0; at each the best
  PGR of an operating point at or below the budget (W and S are operating points); the mean of the
  10. The random router scores 0.55 on it over all ten budgets, but a single operating point earns
  credit only at the budgets above its cost, so each learner's APGR is set beside the same
  estimator over the random mix and the fixed-policy hull *at the same costs* (``matched_apgr``).
  Per learner (``apgr``): the learner alone, with the family-bootstrap spread of its resamples
  (``spread95_family``: APGR is a step function of cost, so this is no confidence interval), in
  every split including ``cv_pooled``; and, where the learner has a lambda sweep, the whole sweep
  with it, matched the same way (no spread: sweep points carry no per-case outcomes). The older trapezoid area through the sweep
  anchored at (0, 0) and (1, 1) (random router 0.5) is kept as ``apgr_interpolated``. CPT(p) is
  the smallest cost share at which the curve reaches PGR = p (linear between points). Undefined
  (None) when acc_S == acc_W or cost_S <= cost_W.
* **Cost-gap recovered at matched accuracy** = (cost_S - c*) / (cost_S - cost_oracle), c* the cost
  of the cheapest operating point of the learner (itself or a sweep point) at least as accurate as
  S: the share of the oracle's saving the learner makes without losing accuracy
  (``matched_cost_gap``; None with a reason when no point reaches S's accuracy).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from controller.env.cost import UNITS, unit as cost_unit_of
from controller.env.registry import ORACLE
from controller.study.stats import family_bootstrap, family_sign_flip_p

WEAK, STRONG = "direct_only", "always_tool_visible"


# ----------------------------------------------------------------------------- per case


def case_cost(outcome: Mapping, unit: str, direct_tokens: int = 0) -> float:
    """One outcome's tool cost in ``unit`` (tokens and work in thousands)."""
    return cost_unit_of(unit).case(outcome, direct_tokens)


def case_vectors(outcomes: Sequence[Mapping], unit: str, direct_tokens: Mapping[str, int] | None = None,
                 split: str | None = None) -> dict[str, tuple[bool, float, str]]:
    """``{case_id: (right, cost, family)}`` over the scored outcomes (of ``split`` when given)."""
    dt = direct_tokens or {}
    return {o["case_id"]: (bool(o["correct"]), case_cost(o, unit, dt.get(o["case_id"], 0)), str(o.get("family")))
            for o in outcomes if o.get("correct") is not None and (split is None or o.get("split") == split)}


def point(vec: Mapping[str, tuple], *, seed: int = 0, n_resamples: int = 1000) -> dict:
    """Accuracy and mean cost over scored cases, each with a family-bootstrap interval."""
    ids = sorted(vec)
    fams = [vec[i][2] for i in ids]
    right = [float(vec[i][0]) for i in ids]
    cost = [vec[i][1] for i in ids]
    n = len(ids)
    return {"n": n, "exact": int(sum(right)), "n_families": len(set(fams)),
            "accuracy": sum(right) / n if n else None, "cost": sum(cost) / n if n else None,
            "accuracy_ci95_family": family_bootstrap(fams, right, seed=seed, n_resamples=n_resamples),
            "cost_ci95_family": family_bootstrap(fams, cost, seed=seed, n_resamples=n_resamples)}


# ----------------------------------------------------------------------------- mixing and hull


def mix_weight(cost: float, cost_a: float, cost_b: float) -> float | None:
    """Probability of running b so the mix of a and b costs ``cost`` (None when out of reach)."""
    lo, hi = min(cost_a, cost_b), max(cost_a, cost_b)
    if cost < lo - 1e-12 or cost > hi + 1e-12:
        return None
    if hi - lo < 1e-12:
        return 0.0
    return min(1.0, max(0.0, (cost - cost_a) / (cost_b - cost_a)))


def upper_hull(points: Sequence[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """Upper concave frontier of (cost, accuracy, name) points, from the cheapest point to the
    most accurate one (a point that costs more for no more accuracy is never on it)."""
    pts = sorted(points, key=lambda p: (p[0], -p[1]))
    hull: list[tuple[float, float, str]] = []
    for p in pts:
        if hull and p[0] == hull[-1][0]:
            continue  # same cost, lower accuracy
        while len(hull) >= 2:
            (x1, y1, _), (x2, y2, _) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) >= 0:  # hull[-1] on or below the chord
                hull.pop()
            else:
                break
        hull.append(p)
    best = max(range(len(hull)), key=lambda i: (hull[i][1], -hull[i][0])) if hull else -1
    return hull[: best + 1]


def hull_value(hull: Sequence[tuple[float, float, str]], cost: float) -> tuple[float, str, str, float] | None:
    """(accuracy, a, b, w) of the hull's random mix at ``cost``; past its last vertex the most
    accurate policy itself (w = 1 on it); below its cheapest vertex None."""
    if not hull or cost < hull[0][0] - 1e-12:
        return None
    for (x1, y1, a), (x2, y2, b) in zip(hull, hull[1:]):
        if cost <= x2 + 1e-12:
            w = mix_weight(cost, x1, x2)
            return y1 + w * (y2 - y1), a, b, w
    x, y, name = hull[-1]
    return y, name, name, 1.0


def mix_test(learner: Mapping[str, tuple], a: Mapping[str, tuple], b: Mapping[str, tuple], w: float, *,
             seed: int = 0) -> dict:
    """The learner against random mixing of a and b (run b with probability w) on shared cases."""
    ids = sorted(set(learner) & set(a) & set(b))
    fams = [learner[i][2] for i in ids]
    mix = [(1 - w) * a[i][0] + w * b[i][0] for i in ids]
    d = [float(learner[i][0]) - m for i, m in zip(ids, mix)]
    n = len(ids)
    return {"w": w, "n": n, "n_families": len(set(fams)), "expected_exact": float(sum(mix)),
            "expected_accuracy": sum(mix) / n if n else None, "learner_exact": int(sum(learner[i][0] for i in ids)),
            "diff": sum(d) / n if n else None, "diff_ci95_family": family_bootstrap(fams, d, seed=seed),
            "p_family": family_sign_flip_p(fams, d, seed=seed) if n else 1.0}


# ----------------------------------------------------------------------------- router curves


def pgr_curve(points: Sequence[tuple[float, float]], weak: tuple[float, float],
              strong: tuple[float, float]) -> list[tuple[float, float]] | None:
    """(cost share, PGR) of each (cost, accuracy) point, anchored at (0, 0) and (1, 1), sorted by
    share; at equal shares the best PGR is kept. None when the references tie on cost or accuracy."""
    (cw, aw), (cs, as_) = weak, strong
    if abs(cs - cw) < 1e-12 or abs(as_ - aw) < 1e-12:
        return None
    best: dict[float, float] = {0.0: 0.0, 1.0: 1.0}
    for c, a in points:
        x = round(min(1.0, max(0.0, (c - cw) / (cs - cw))), 9)
        y = (a - aw) / (as_ - aw)
        best[x] = max(best.get(x, -np.inf), y)
    return sorted(best.items())


def apgr(curve: Sequence[tuple[float, float]] | None) -> float | None:
    """Area under the PGR curve over cost share [0, 1] (trapezoids); 0.5 for the random router."""
    if not curve:
        return None
    xs, ys = zip(*curve)
    return float(sum((x2 - x1) * (y1 + y2) / 2 for x1, x2, y1, y2 in zip(xs, xs[1:], ys, ys[1:])))


def cpt(curve: Sequence[tuple[float, float]] | None, target: float) -> float | None:
    """Smallest cost share at which the (piecewise linear) curve reaches PGR ``target``."""
    if not curve:
        return None
    if curve[0][1] >= target:
        return float(curve[0][0])
    for (x1, y1), (x2, y2) in zip(curve, curve[1:]):
        if y2 >= target:
            return float(x1 + (x2 - x1) * (target - y1) / (y2 - y1)) if y2 != y1 else float(x2)
    return None


def cost_gap_recovered(cost_strong: float, cost_learner: float, cost_oracle: float) -> float | None:
    """(cost_S - cost_L) / (cost_S - cost_oracle); None when the oracle saves nothing. Meaningful
    only at matched accuracy (``matched_cost_gap``)."""
    gap = cost_strong - cost_oracle
    return None if abs(gap) < 1e-12 else (cost_strong - cost_learner) / gap


ROUTELLM_BUDGETS = 10
APGR_METHOD = ("RouteLLM estimator: 10 cost budgets evenly spaced over the weak-to-strong cost gap (shares 0.1, "
               "0.2, ..., 1.0); at each the best PGR of an operating point costing at most the budget (the weak "
               "and strong references are operating points); the mean of the 10 PGRs")
ROUTELLM_RANDOM_APGR = 0.55  # the random router on this estimator: PGR = share at each budget, mean of 0.1..1.0


def routellm_apgr(points: Sequence[tuple], weak: tuple, strong: tuple, budgets: int = ROUTELLM_BUDGETS):
    """APGR by RouteLLM's estimator (``APGR_METHOD``) over (cost, accuracy) operating points.

    Vectorised: every cost and accuracy may be a numpy array of the same shape (e.g. bootstrap
    resamples); the result then has that shape, NaN where the references tie on cost or accuracy.
    Scalars in, a float (or None) out."""
    scalar = np.ndim(weak[0]) == 0 and all(np.ndim(c) == 0 for c, _ in points)
    cw, aw = (np.asarray(v, dtype=float) for v in weak)
    cs, as_ = (np.asarray(v, dtype=float) for v in strong)
    span, gain = cs - cw, as_ - aw
    ok = (span > 1e-12) & (np.abs(gain) > 1e-12)
    span_s, gain_s = np.where(ok, span, 1.0), np.where(ok, gain, 1.0)
    ops = [(np.zeros_like(span), np.zeros_like(span)), (np.ones_like(span), np.ones_like(span))]  # W, S
    ops += [((np.asarray(c, dtype=float) - cw) / span_s, (np.asarray(a, dtype=float) - aw) / gain_s)
            for c, a in points]
    total = np.zeros_like(span)
    for k in range(1, budgets + 1):
        x = k / budgets
        best = np.full_like(span, -np.inf)
        for share, pgr in ops:
            best = np.where(share <= x + 1e-9, np.maximum(best, pgr), best)
        total = total + best
    out = np.where(ok, total / budgets, np.nan)
    if scalar:
        v = float(out)
        return None if np.isnan(v) else v
    return out


def _family_sums(vecs: Mapping[str, Mapping[str, tuple]], names: Sequence[str]):
    """Per family (over the cases every named policy has): right and cost sums per policy, cases."""
    ids = sorted(set.intersection(*(set(vecs[p]) for p in names)))
    fams = sorted({vecs[names[0]][i][2] for i in ids})
    at = {f: k for k, f in enumerate(fams)}
    counts = np.zeros(len(fams))
    right = {p: np.zeros(len(fams)) for p in names}
    cost = {p: np.zeros(len(fams)) for p in names}
    for i in ids:
        k = at[vecs[names[0]][i][2]]
        counts[k] += 1
        for p in names:
            right[p][k] += float(vecs[p][i][0])
            cost[p][k] += float(vecs[p][i][1])
    return right, cost, counts


def family_bootstrap_stat(vecs: Mapping[str, Mapping[str, tuple]], names: Sequence[str], stat, *,
                          n_resamples: int = 1000, seed: int = 0, alpha: float = 0.05) -> dict:
    """Percentile interval of ``stat(acc, cost)`` (dicts of per-policy arrays over resamples) when
    whole families are resampled with replacement and every policy's accuracy and mean cost are
    recomputed over the drawn families' cases. NaN values (undefined in a resample) are left out;
    ``defined_share`` says how many were kept."""
    right, cost, counts = _family_sums(vecs, names)
    if not len(counts):
        return {"ci95_family": None, "defined_share": 0.0}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(counts), size=(n_resamples, len(counts)))
    n = counts[idx].sum(axis=1)
    acc = {p: right[p][idx].sum(axis=1) / n for p in names}
    cst = {p: cost[p][idx].sum(axis=1) / n for p in names}
    vals = np.asarray(stat(acc, cst), dtype=float)
    ok = vals[~np.isnan(vals)]
    if not len(ok):
        return {"ci95_family": None, "defined_share": 0.0}
    lo, hi = np.quantile(ok, [alpha / 2, 1 - alpha / 2])
    return {"ci95_family": [float(lo), float(hi)], "defined_share": float(len(ok) / len(vals))}


def matched_cost_gap(name: str, vecs: Mapping[str, Mapping], pts: Mapping[str, dict],
                     frontier: Sequence[tuple[float, float]] | None, *, seed: int = 0) -> dict:
    """Cost-gap recovered at matched accuracy: (cost_S - c*) / (cost_S - cost_oracle), where c* is
    the cost of the cheapest operating point of the learner (the learner itself or a point of its
    lambda sweep) whose accuracy is at least always-tool's. None with a ``reason`` when no point
    reaches it. The family-bootstrap interval (learner itself only: sweep points carry no per-case
    outcomes) recomputes the ratio per resample, and ``matched_share`` is the share of resamples in
    which the learner is still at least as accurate as always-tool."""
    s, o, me = pts[STRONG], pts[ORACLE], pts[name]
    cands = [(me["cost"], me["accuracy"], "learner")] + [(c, a, "lambda sweep") for c, a in (frontier or [])]
    ok = sorted(((c, a, src) for c, a, src in cands if a is not None and a >= s["accuracy"] - 1e-12),
                key=lambda t: (t[0], t[2] != "learner"))  # at equal cost the learner itself (it has an interval)
    out: dict = {"strong_accuracy": s["accuracy"], "strong_cost": s["cost"], "oracle_cost": o["cost"]}
    if abs(s["cost"] - o["cost"]) < 1e-12:
        return {**out, "value": None, "ci95_family": None, "reason": "the oracle spends what always-tool spends"}
    if not ok:
        best = max((a for _, a, _ in cands if a is not None), default=None)
        return {**out, "value": None, "ci95_family": None,
                "reason": f"no operating point of the learner reaches always-tool's accuracy "
                          f"({s['accuracy']:.4f}; best {best if best is None else round(best, 4)})"}
    c, a, src = ok[0]
    out.update(value=cost_gap_recovered(s["cost"], c, o["cost"]), cost=c, accuracy=a, operating_point=src)
    if src != "learner":
        out.update(ci95_family=None, interval_note="the lambda-sweep point carries no per-case outcomes: no interval")
        return out

    def stat(acc, cost):
        gap = cost[STRONG] - cost[ORACLE]
        return np.where(np.abs(gap) > 1e-12, (cost[STRONG] - cost[name]) / np.where(np.abs(gap) > 1e-12, gap, 1), np.nan)

    names = [name, STRONG, ORACLE]
    out.update(family_bootstrap_stat(vecs, names, stat, seed=seed))
    right, _, counts = _family_sums(vecs, names)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(counts), size=(1000, len(counts)))
    out["matched_share"] = float(np.mean(right[name][idx].sum(axis=1) >= right[STRONG][idx].sum(axis=1)))
    return out


# ----------------------------------------------------------------------------- the summary key


def _frontier_points(front: Mapping, split: str, unit: str, direct_total: float) -> list[tuple[float, float]]:
    """(cost per scored case in ``unit``, accuracy) of a learner's lambda sweep on ``split``."""
    out = []
    for p in front.get("points") or []:
        n = p.get("n") or 0
        if p.get("split", "test") != split or not n or p.get("accuracy") is None:
            continue
        cu = cost_unit_of(unit)
        if cu.field not in p:
            continue
        out.append((cu.per_case(p, n, direct_total), p["accuracy"]))
    return out


SPREAD_NOTE = ("family-bootstrap percentiles of APGR, a step function of cost (it jumps where a point crosses a "
               "budget): a spread of the resamples, not a confidence interval")


def matched_apgr(points: Sequence[tuple[float, float]], weak: tuple, strong: tuple, hull: Sequence[tuple]) -> dict:
    """APGR of the learner's operating points beside the same estimator over baselines *at the same
    costs*: the weak-strong random mix (PGR = cost share) and the fixed-policy hull. The fair
    comparison, since the estimator gives any point credit at every budget above its cost (the
    random router's 0.55 covers all ten budgets, a single point far fewer)."""
    span = strong[0] - weak[0]
    mix = [(c, weak[1] + (strong[1] - weak[1]) * min(1.0, max(0.0, (c - weak[0]) / span))) for c, _ in points] \
        if span > 1e-12 else []
    hv = [(c, v[0]) for c, _ in points if (v := hull_value(hull, c)) is not None]
    me, rm = routellm_apgr(points, weak, strong), routellm_apgr(mix, weak, strong) if mix else None
    hl = routellm_apgr(hv, weak, strong) if len(hv) == len(points) else None
    return {"learner": me, "random_mix": rm, "hull": hl,
            "learner_minus_random_mix": None if me is None or rm is None else me - rm,
            "learner_minus_hull": None if me is None or hl is None else me - hl,
            "method": "the same estimator over the random mix of the weak and strong references and over the "
                      "fixed-policy hull, each taken at the learner's operating points' costs"}


def learner_routing(name: str, vecs: Mapping[str, Mapping], pts: Mapping[str, dict], hull: list,
                    fixed: Sequence[str], frontier: list[tuple[float, float]] | None, *, seed: int = 0) -> dict:
    """One learner in one unit on one split: its point, every bracketing random mix with a
    family-level test, the hull's mix, PGR/APGR/CPT and the cost-gap recovered."""
    me = pts[name]
    out: dict = {"cost": me["cost"], "accuracy": me["accuracy"], "exact": me["exact"], "mixes": []}
    for i, a in enumerate(fixed):
        for b in fixed[i + 1:]:
            lo, hi = sorted((a, b), key=lambda p: pts[p]["cost"])
            w = mix_weight(me["cost"], pts[lo]["cost"], pts[hi]["cost"])
            if w is None or pts[lo]["cost"] == pts[hi]["cost"]:
                continue
            out["mixes"].append({"a": lo, "b": hi, **mix_test(vecs[name], vecs[lo], vecs[hi], w, seed=seed)})
    hv = hull_value(hull, me["cost"])
    if hv is not None:
        acc, a, b, w = hv
        out["hull"] = {"a": a, "b": b, "accuracy": acc, **mix_test(vecs[name], vecs[a], vecs[b], w, seed=seed)}
    if WEAK in pts and STRONG in pts:
        weak, strong = (pts[WEAK]["cost"], pts[WEAK]["accuracy"]), (pts[STRONG]["cost"], pts[STRONG]["accuracy"])
        curve = pgr_curve([(me["cost"], me["accuracy"])], weak, strong)
        out["pgr"] = None if curve is None else dict(curve).get(
            round(min(1.0, max(0.0, (me["cost"] - weak[0]) / (strong[0] - weak[0]))), 9))
        mine = (me["cost"], me["accuracy"])
        boot = family_bootstrap_stat(
            vecs, [name, WEAK, STRONG],
            lambda acc, cost: routellm_apgr([(cost[name], acc[name])], (cost[WEAK], acc[WEAK]),
                                            (cost[STRONG], acc[STRONG])), seed=seed)
        boot["spread95_family"] = boot.pop("ci95_family")  # percentiles of a step function: not a CI
        out["apgr"] = {"method": APGR_METHOD, "random_router": ROUTELLM_RANDOM_APGR,
                       "learner": {"value": routellm_apgr([mine], weak, strong), **boot, "spread_note": SPREAD_NOTE,
                                   "operating_points": "the learner alone (with the weak and strong references)"},
                       "matched": matched_apgr([mine], weak, strong, hull),
                       "frontier": None, "interpolated": None}
        if frontier:
            fc = pgr_curve(frontier, weak, strong)
            span = strong[0] - weak[0]
            value = routellm_apgr(list(frontier) + [mine], weak, strong)
            out["frontier"] = {"points": [[round(x, 4), round(y, 4)] for x, y in fc] if fc else None,
                               "cost_accuracy": [[c, a] for c, a in sorted(frontier)],
                               "apgr": value, "apgr_method": APGR_METHOD,
                               "apgr_interpolated": apgr(fc), "cpt50": cpt(fc, 0.5), "cpt80": cpt(fc, 0.8)}
            for k in ("cpt50", "cpt80"):
                v = out["frontier"][k]
                out["frontier"][f"{k}_cost"] = None if v is None else weak[0] + v * span
            out["apgr"]["frontier"] = {"value": value, "ci95_family": None,
                                       "operating_points": "the learner and its lambda sweep",
                                       "interval_note": "lambda-sweep points carry no per-case outcomes: no interval",
                                       "matched": matched_apgr(list(frontier) + [mine], weak, strong, hull)}
            out["apgr"]["interpolated"] = {"value": apgr(fc), "method": "trapezoids through the sweep's PGR curve "
                                                                      "anchored at (0, 0) and (1, 1); random router 0.5"}
        if ORACLE in pts:
            out["cost_gap_recovered_matched"] = matched_cost_gap(name, vecs, pts, frontier, seed=seed)
            out["cost_gap_recovered"] = out["cost_gap_recovered_matched"]["value"]
            out["accuracy_diff_vs_strong"] = me["accuracy"] - strong[1]
    return out


def distinct_policies(names: Sequence[str], vecs: Mapping[str, Mapping]) -> tuple[list[str], dict[str, str]]:
    """Drop policies whose (right, cost) on every case equals an earlier one's (e.g.
    ``visible_disagree_rule`` == ``always_tool_visible`` when no program equals the direct answer):
    one mixing line per distinct behaviour. Returns (kept, {dropped: the kept one it equals})."""
    kept, same = [], {}
    for p in names:
        twin = next((q for q in kept if vecs[q] == vecs[p]), None)
        if twin is None:
            kept.append(p)
        else:
            same[p] = twin
    return kept, same


def routing_table(outcomes_by_split: Mapping[str, Mapping[str, Sequence[Mapping]]], fixed: Sequence[str],
                  learners: Sequence[str], *, direct_tokens: Mapping[str, int] | None = None,
                  frontier: Mapping | None = None, seed: int = 0) -> dict:
    """``routing`` summary key: per split and unit, every policy's point (scored cases), the
    fixed-policy hull, and per learner ``learner_routing``."""
    dt = direct_tokens or {}
    out: dict = {"weak": WEAK, "strong": STRONG, "units": list(UNITS), "random_router_apgr": ROUTELLM_RANDOM_APGR,
                 "random_router_apgr_interpolated": 0.5, "apgr_method": APGR_METHOD}
    for split, by_policy in outcomes_by_split.items():
        out[split] = {}
        for unit in UNITS:
            vecs = {p: case_vectors(o, unit, dt) for p, o in by_policy.items()}
            vecs = {p: v for p, v in vecs.items() if v}
            if not vecs:
                continue
            pts = {p: point(v, seed=seed) for p, v in vecs.items()}
            fx, same = distinct_policies([p for p in fixed if p in pts], vecs)
            hull = upper_hull([(pts[p]["cost"], pts[p]["accuracy"], p) for p in fx])
            ids = set().union(*(vecs[p] for p in fx)) if fx else set()
            direct_total = float(sum(dt.get(i, 0) for i in ids))
            block = {"points": pts, "hull": [{"policy": n, "cost": c, "accuracy": a} for c, a, n in hull],
                     "same_as": same, "learners": {}}
            for name in learners:
                if name in pts:
                    front = _frontier_points((frontier or {}).get(name) or {}, split, unit, direct_total)
                    block["learners"][name] = learner_routing(name, vecs, pts, hull, fx, front or None, seed=seed)
            out[split][unit] = block
    return out
