"""The learnability ceiling: how much of the always-tool -> oracle gap a controller could learn
from what it sees, computed from the traces and the visible state alone, before any learner runs.

Always-tool follows one chain (sample 0): WRITE, FIX while the public example fails and the
budget allows, commit a passing program, else the direct answer. Its *decision points* are the
start (before the write) and each failed round with a repair left (before fix r). At each one a
controller's only cost lever is to stop: answer directly and save the rounds always-tool would
still spend. Stopping at a point is **safe** when it loses nothing against always-tool: the direct
answer is right, or always-tool's own answer is wrong. (At the commit point, direct vs program costs
the same; it moves accuracy only, counted apart as ``commit_direct_wins``.)

* ``gap``: always-tool's generations minus those of stopping at each case's earliest safe point
  (the hindsight oracle at K = 1, on the always-tool chain).
* ``points``: per decision point, the cases reaching it, the safe ones, the generations saved by
  stopping every safe case there, and the share of the gap whose earliest safe stop is there.
* ``in_sample``: CART trees of depth 1-6 fit per decision point on the visible features (rows
  weighted by what stopping saves), stopping only in leaves with no unsafe case: zero losses
  in-sample, savings as a share of the gap (the most a bounded-capacity policy can fit).
* ``separability``: out-of-family AUC of "safe to stop" at each point (logistic regression, a
  depth-3 tree and a random forest; family-grouped K-fold, every score out of fold).
* ``out_of_sample``: per model, the same folds; on the training families each point stops above
  the highest score of an unsafe training case (zero losses on the training families), applied to the held-out
  families in order, the threshold set on inner family-grouped out-of-fold scores of the training
  families (never on scores a model fit); savings share and lost cases. ``ceiling`` is the best share among models that
  lose no case out of sample (0 when none does), beside the best share at any loss.

At K > 1 the decision points and the gap follow the always-tool chain (sample 0), while the
accuracy levers at the commit count every sample as the headroom does (every sample drawn, the
commit rule's choice): ``commit_direct_wins`` (the direct answer right, the commit wrong) and
``sample_wins`` (another passing sample right, the commit wrong). Resampling's cost lever is not
counted (``commit_any_sample`` and the routing sections cover the samples' cost).

``risk_controlled``: the no-loss claim's own selection rule, Learn-Then-Test on the inner folds:
per outer fold one threshold on the inner out-of-fold scores, the loosest whose Clopper-Pearson
upper bound (level delta) on the share of cases lost stays within the margin (fixed-sequence
testing from the strictest threshold), applied to the held-out families.

Reads ``hidden`` to label (this is analysis); every feature is ``visible_state``'s.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from controller.env.state import chains, visible_state, FEATURE_NAMES, ALL_FEATURE_NAMES

DEPTHS = (1, 2, 3, 4, 5, 6)
WITHIN = "within families (every family seen in training)"  # the scope of ``fold_of`` folds
MODELS = ("logistic", "tree_depth_3", "forest")


# -- decision points along the always-tool chain -------------------------------------------------

def decision_rows(record: Mapping) -> list[dict]:
    """One row per decision point always-tool passes through on ``record``: point index (0 = start,
    r = before fix r), the tree position, the generations still to spend, and whether stopping is
    safe. Plus ``commit_direct_wins`` on the case (direct right where the committed program is wrong)."""
    rec = dict(record)
    rounds, grades = chains(rec)[0]
    direct = bool(rec["hidden"]["direct_exact"])
    budget = int(rec["max_repairs"])
    taken = 0
    for i, r in enumerate(rounds):  # always-tool stops at the first pass or when the budget is spent
        taken = i + 1
        if r["visible_pass"] or i >= budget:
            break
    tool_right = bool(taken and rounds[taken - 1]["visible_pass"] and grades[taken - 1]["hidden_exact"])
    answer_right = tool_right if (taken and rounds[taken - 1]["visible_pass"]) else direct
    safe = direct or not answer_right
    out = []
    for point in range(taken):  # before round ``point`` (0 = the write, r = fix r)
        out.append({"case_id": rec["case_id"], "family": rec["family"], "point": point,
                    "pos": (point,) if point else (), "remaining": taken - point, "safe": safe,
                    "lost_if_stop": int(not safe)})
    return out


def point_name(p: int) -> str:
    return "start (before write)" if p == 0 else f"before fix {p}"


def _features(records_by_id: Mapping, rows: Sequence[dict]) -> tuple[np.ndarray, tuple]:
    states = [visible_state(dict(records_by_id[r["case_id"]]), r["pos"]) for r in rows]
    names = ALL_FEATURE_NAMES if any(s.features.get("program_samples", 1.0) > 1 for s in states) else FEATURE_NAMES
    return np.array([[s.features.get(n, np.nan) for n in names] for s in states], dtype=float).reshape(len(rows), len(names)), names


# -- the ceiling ---------------------------------------------------------------------------------

def _earliest_safe_savings(rows: Sequence[dict]) -> dict[str, tuple[int, int]]:
    """case -> (point, generations saved) of its earliest safe stop (absent: never safe)."""
    out: dict[str, tuple[int, int]] = {}
    for r in rows:
        if r["safe"] and (r["case_id"] not in out or r["point"] < out[r["case_id"]][0]):
            out[r["case_id"]] = (r["point"], r["remaining"])
    return out


def _policy_savings(rows: Sequence[dict], stop: np.ndarray) -> tuple[int, int]:
    """(generations saved, cases lost) of stopping at each case's first row with ``stop`` true."""
    first: dict[str, dict] = {}
    for r, s in zip(rows, stop):
        if s and (r["case_id"] not in first or r["point"] < first[r["case_id"]]["point"]):
            first[r["case_id"]] = r
    return sum(r["remaining"] for r in first.values()), sum(r["lost_if_stop"] for r in first.values())


def _model(name: str, seed: int):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier
    if name == "logistic":
        from sklearn.impute import SimpleImputer

        # absent shape features are NaN (``_matrix``); a matrix without any passes through unchanged
        return make_pipeline(SimpleImputer(keep_empty_features=True), StandardScaler(),
                             LogisticRegression(max_iter=2000, C=1.0))
    if name == "forest":
        return RandomForestClassifier(n_estimators=50, min_samples_leaf=2, random_state=seed, n_jobs=1)
    depth = int(name.rsplit("_", 1)[1])
    return DecisionTreeClassifier(max_depth=depth, random_state=seed)


def _fit_scores(name: str, X: np.ndarray, y: np.ndarray, Xt: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training scores, held-out scores) of P(safe); a constant when the training rows are one class."""
    if len(set(y.tolist())) < 2:
        c = float(y[0]) if len(y) else 0.0
        return np.full(len(X), c), np.full(len(Xt), c)
    m = _model(name, seed).fit(X, y)
    return m.predict_proba(X)[:, 1], m.predict_proba(Xt)[:, 1] if len(Xt) else np.zeros(0)


def _inner_scores(name: str, X: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int, k: int = 3) -> np.ndarray:
    """Out-of-fold scores on the training families (family-grouped inner folds): the threshold is set
    on scores the model did not fit, as it will meet held-out families."""
    from sklearn.model_selection import GroupKFold
    k = min(k, len(set(groups.tolist())))
    if k < 2:
        return _fit_scores(name, X, y, X[:0], seed)[0]
    out = np.zeros(len(y))
    for a, b in GroupKFold(n_splits=k).split(X, y, groups):
        out[b] = _fit_scores(name, X[a], y[a], X[b], seed)[1]
    return out


def _pure_leaf_stops(X: np.ndarray, y: np.ndarray, w: np.ndarray, depth: int, seed: int) -> np.ndarray:
    """Rows in leaves of a depth-``depth`` tree (weighted by savings) that hold no unsafe row."""
    from sklearn.tree import DecisionTreeClassifier
    if not len(y):
        return np.zeros(0, dtype=bool)
    if y.all():
        return np.ones(len(y), dtype=bool)
    if not y.any():
        return np.zeros(len(y), dtype=bool)
    leaves = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X, y, sample_weight=w).apply(X)
    bad = set(leaves[~y].tolist())
    return np.array([lf not in bad for lf in leaves])


def ltt_threshold(rows: Sequence[dict], scores: np.ndarray, margin: float, delta: float) -> float:
    """Learn-Then-Test by fixed sequence: thresholds from strict to loose on calibration scores; each
    is accepted while the Clopper-Pearson upper bound (level ``delta``) of the share of cases lost by
    stopping above it stays at or below ``margin``; the loosest accepted one (inf: none accepted)."""
    from controller.study.stats import clopper_pearson
    n = len({r["case_id"] for r in rows})
    best = np.inf
    for t in sorted(set(scores[np.isfinite(scores)].tolist()), reverse=True):
        _, lost = _policy_savings(rows, scores >= t)
        if clopper_pearson(lost, n, delta)[1] > margin:
            break
        best = t
    return best - 1e-12 if np.isfinite(best) else np.inf


def ceiling_table(records: Sequence[Mapping], *, folds: int = 5, seed: int = 0, margin: float = 0.02,
                  delta: float = 0.05, fold_of: Mapping[str, int] | None = None) -> dict:
    """``ceiling`` summary key over the scored, assigned records (pooled over train, dev and test).

    ``fold_of`` (case id -> fold): the outer folds are these (``within_family``'s case-level folds,
    every family seen in training) and the inner ones group by case, not family."""
    recs = [r for r in records if r.get("split") in ("train", "dev", "test") and r["hidden"]["answer"] is not None]
    by_id = {r["case_id"]: r for r in recs}
    rows = [row for r in recs for row in decision_rows(r)]
    k = max((len(chains(dict(r))) for r in recs), default=1)
    if k > 1:  # every sample drawn and committed by the commit rule, as the headroom counts them
        from controller.study.headroom import case_cell

        cells = [case_cell(r) for r in recs]
        commit_wins = sum(1 for c in cells if c["cell"] == "direct_right_commit_wrong")
        sample_wins = sum(1 for c in cells if c["passing_right_commit_wrong"])
    else:
        commit_wins, sample_wins = sum(1 for r in recs if _commit_direct_wins(r)), 0
    always = sum(r["remaining"] for r in rows if r["point"] == 0)
    earliest = _earliest_safe_savings(rows)
    gap = sum(s for _, s in earliest.values())
    out: dict = {"n": len(recs), "families": len({r["family"] for r in recs}), "always_tool_generations": always,
                 "gap_generations": gap, "commit_direct_wins": commit_wins, "k": k, "sample_wins": sample_wins,
                 "folds": 0, "points": [],
                 "in_sample": [], "separability": [], "out_of_sample": [], "risk_controlled": [], "ceiling_share": 0.0,
                 "best_share_any_loss": None}
    out["nothing_to_learn"] = nothing_to_learn(recs, gap)
    if not rows:
        return out
    X, names = _features(by_id, rows)
    y = np.array([r["safe"] for r in rows], dtype=bool)
    w = np.array([r["remaining"] for r in rows], dtype=float)
    pts = np.array([r["point"] for r in rows])
    share = (lambda g: g / gap if gap else 0.0)
    for p in sorted(set(pts.tolist())):
        m = pts == p
        out["points"].append({"point": int(p), "name": point_name(int(p)), "cases": int(m.sum()), "safe": int(y[m].sum()),
                              "savings_if_all_safe_stop": int(w[m & y].sum()),
                              "gap_share_if_all_safe_stop": share(int(w[m & y].sum())),
                              "gap_share_earliest": share(sum(s for q, s in earliest.values() if q == p))})
    for d in DEPTHS:
        stop = np.zeros(len(rows), dtype=bool)
        for p in set(pts.tolist()):
            m = pts == p
            stop[m] = _pure_leaf_stops(X[m], y[m], w[m], d, seed)
        saved, lost = _policy_savings(rows, stop)
        out["in_sample"].append({"depth": d, "saved_generations": saved, "lost": lost, "gap_share": share(saved)})
    fams = np.array([r["family"] for r in rows])
    if fold_of is not None:  # case-level folds: the inner thresholds are set on held-out cases, not families
        case_fold = np.array([fold_of[r["case_id"]] for r in rows])
        splits = [(np.flatnonzero(case_fold != f), np.flatnonzero(case_fold == f)) for f in sorted(set(case_fold.tolist()))]
        fams = np.array([r["case_id"] for r in rows])
        k = len(splits)
        if k < 2:
            return out
    else:
        k = min(folds, len(set(fams.tolist())))
        if k < 2:
            return out
        from sklearn.model_selection import GroupKFold
        splits = list(GroupKFold(n_splits=k).split(X, y, fams))
    out["folds"] = k
    out["scope"] = WITHIN if fold_of is not None else "out of family"
    for name in MODELS:
        oof = np.full(len(rows), np.nan)
        stop = np.zeros(len(rows), dtype=bool)
        stop_ltt = np.zeros(len(rows), dtype=bool)
        for tr, te in splits:
            inner = np.full(len(rows), np.nan)
            for p in set(pts.tolist()):
                a, b = tr[pts[tr] == p], te[pts[te] == p]
                if not len(b):
                    continue
                if not len(a):
                    oof[b] = 0.0
                    continue
                _, s_te = _fit_scores(name, X[a], y[a], X[b], seed)
                oof[b] = s_te
                inner[a] = _inner_scores(name, X[a], y[a], fams[a], seed)
                unsafe = inner[a][~y[a]]
                thr = unsafe.max() if len(unsafe) else -np.inf
                stop[b] = s_te > thr
            t = ltt_threshold([rows[i] for i in tr], np.nan_to_num(inner[tr], nan=-np.inf), margin, delta)
            stop_ltt[te] = oof[te] > t
        for p in sorted(set(pts.tolist())):
            m = pts == p
            out["separability"].append({"model": name, "point": int(p), "auc": _auc(y[m], oof[m])})
        saved, lost = _policy_savings(rows, stop)
        out["out_of_sample"].append({"model": name, "saved_generations": saved, "lost": lost, "gap_share": share(saved)})
        saved, lost = _policy_savings(rows, stop_ltt)
        out["risk_controlled"].append({"model": name, "saved_generations": saved, "lost": lost,
                                       "lost_share": lost / len(recs), "gap_share": share(saved),
                                       "margin": margin, "delta": delta})
    zero = [r["gap_share"] for r in out["out_of_sample"] if r["lost"] == 0]
    out["ceiling_share"] = max(zero, default=0.0)
    best = max(out["out_of_sample"], key=lambda r: r["gap_share"])
    out["best_share_any_loss"] = {"model": best["model"], "gap_share": best["gap_share"], "lost": best["lost"]}
    out["in_sample_best_share"] = max(r["gap_share"] for r in out["in_sample"])
    if out["nothing_to_learn"]:  # a share of a gap nothing can be learned on is no ceiling
        out["ceiling_share"], out["in_sample_best_share"] = None, None
    out["sentence"] = ceiling_sentence(out)
    return out


def _commit_direct_wins(rec: Mapping) -> bool:
    rows = decision_rows(rec)
    rounds, grades = chains(dict(rec))[0]
    taken = len(rows)
    return bool(taken and rounds[taken - 1]["visible_pass"] and rec["hidden"]["direct_exact"]
                and not grades[taken - 1]["hidden_exact"])


def _auc(y: np.ndarray, s: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score
    if len(set(y.tolist())) < 2:
        return None
    return float(roc_auc_score(y, s))


def nothing_to_learn(recs: Sequence[Mapping], gap: int) -> str | None:
    """Why there is nothing to learn (None: there is something): no case has a right answer anywhere
    in its recorded tree (stopping at once loses nothing, so "learnable" shares say nothing about a
    controller), or the gap is zero (always-tool already stops at every earliest safe point)."""
    from controller.study.headroom import headroom_cells

    if not recs:
        return None
    cells = headroom_cells(recs)
    if cells["unreachable_cases"] == cells["n"]:
        return (f"no answer is right anywhere in the {cells['n']} scored cases (the hindsight oracle gets none): "
                "answering directly at once loses nothing, so there is no decision to learn")
    if gap == 0:
        return "the gap is zero: always-tool already stops at every case's earliest safe point"
    return None


def ceiling_sentence(c: Mapping) -> str:
    """The one line: at most X% of the gap is learnable from what a controller sees here."""
    if c.get("nothing_to_learn"):
        return f"Nothing to learn: {c['nothing_to_learn']}."
    best = c.get("best_share_any_loss") or {}
    within = c.get("scope") == WITHIN
    return (f"At most {100 * c['ceiling_share']:.0f}% of the {c['gap_generations']}-generation always-tool -> oracle gap "
            f"is learnable {WITHIN if within else 'out of family'} from what a controller sees here without losing a "
            f"case (in-sample, trees of depth <= {DEPTHS[-1]} recover up to "
            f"{100 * c.get('in_sample_best_share', 0.0):.0f}% at zero loss; the best "
            f"{'held-out-case' if within else 'out-of-family'} model, {best.get('model')}, saves {100 * best.get('gap_share', 0.0):.0f}% losing "
            f"{best.get('lost', 0)} cases).")
