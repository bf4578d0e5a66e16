"""How well the model's confidence separates right from wrong, per decision point.

The confidence features are the visible state's token log-probability statistics
(``controller.env.state.LOGPROB_FEATURE_NAMES``: the direct answer's and the latest revealed
program's mean, minimum and token count), present only where the trace recorded them (hf, vllm, an
openai server that gives logprobs; never synth). At each decision point of the always-tool chain
(``controller.study.ceiling.decision_rows``: the start, and before each fix) every feature present
there is scored against two labels read from ``hidden`` (this is analysis):

* ``direct_right``: the direct answer is right (what a stop at this point would commit);
* ``safe``: stopping here loses nothing against always-tool (the ceiling's label).

The feature's raw value is the score (higher = more confident), so no model is fit and the AUC
needs no cross-validation; ``auc`` below 0.5 means the confidence points the wrong way. Cases of a
family are not independent, so the 95% interval resamples families (a family-cluster bootstrap,
``boot`` draws, seed ``seed``), and ``families`` counts them. Rows whose feature is absent are
counted in ``missing`` and left out; a label with one class gives ``auc`` None.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.env.state import LOGPROB_FEATURE_NAMES, visible_state
from controller.study.ceiling import decision_rows, point_name

LABELS = ("direct_right", "safe")


def _auc(y: Sequence[int], s: Sequence[float]) -> float | None:
    """The Mann-Whitney AUC (ties count a half); None with one class."""
    pos = [v for v, t in zip(s, y) if t]
    neg = [v for v, t in zip(s, y) if not t]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def _family_ci(rows: list[tuple[str, int, float]], boot: int, seed: int) -> tuple[float | None, float | None]:
    import numpy as np

    fams = sorted({f for f, _, _ in rows})
    if len(fams) < 2 or boot <= 0:
        return None, None
    by = {f: [(y, s) for g, y, s in rows if g == f] for f in fams}
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(boot):
        draw = [x for f in rng.choice(len(fams), len(fams)) for x in by[fams[f]]]
        a = _auc([y for y, _ in draw], [s for _, s in draw])
        if a is not None:
            vals.append(a)
    if len(vals) < boot // 2:
        return None, None
    lo, hi = np.percentile(vals, [2.5, 97.5])
    return round(float(lo), 3), round(float(hi), 3)


def confidence_table(records: Sequence[Mapping], *, boot: int = 500, seed: int = 0) -> dict:
    """``{"recorded": cases with any confidence feature, "n": scored cases, "rows": [...]}``, one row per
    (decision point, feature, label) with n, positives, missing, families, auc and its interval."""
    scored = [r for r in records if r["hidden"].get("direct_exact") is not None]
    cells: dict = {}
    recorded = set()
    for rec in scored:
        direct_right = int(bool(rec["hidden"]["direct_exact"]))
        for row in decision_rows(rec):
            feats = visible_state(dict(rec), row["pos"]).features
            labels = {"direct_right": direct_right, "safe": int(row["safe"])}
            for name in LOGPROB_FEATURE_NAMES:
                present = name in feats and feats[name] == feats[name]
                recorded.add(rec["case_id"]) if present else None
                for label in LABELS:
                    cell = cells.setdefault((row["point"], name, label), {"rows": [], "missing": 0})
                    if present:
                        cell["rows"].append((rec["family"], labels[label], float(feats[name])))
                    else:
                        cell["missing"] += 1
    out = []
    for (point, name, label), cell in sorted(cells.items()):
        rows = cell["rows"]
        if not rows:
            continue
        auc = _auc([y for _, y, _ in rows], [s for _, _, s in rows])
        lo, hi = _family_ci(rows, boot, seed) if auc is not None else (None, None)
        out.append({"point": point, "name": point_name(point), "feature": name, "label": label, "n": len(rows),
                    "positives": sum(y for _, y, _ in rows), "missing": cell["missing"],
                    "families": len({f for f, _, _ in rows}), "auc": None if auc is None else round(auc, 3),
                    "auc_ci95": [lo, hi]})
    return {"recorded": len(recorded), "n": len(scored), "boot": boot, "rows": out}
