"""The learned rule: a scikit-learn classifier over visible-state features, chosen on dev.

Training states carry oracle labels. Each decision point gets its own classifier, and at decision
time its probabilities are masked to the valid actions, so a learned policy can never take an
invalid step. Candidates range from a
one-split stump to a small forest; the one with the best simulated dev accuracy wins (ties: fewer
program generations, then the simpler model). When every candidate ties on dev, ``dev_tie`` says
so and the report does not present the choice as one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from controller.env.state import ACTIONS, COMMIT_SAMPLE, FEATURE_NAMES, State, features_for

CANDIDATES = ("stump", "tree_depth2", "tree_depth3", "logistic", "forest")
ALT = "PROGRAM:alt"  # a rule's name for the i-th chosen-sample commit a state lists: PROGRAM:alt1, ...


def canonical(valid: Sequence[str]) -> tuple[str, ...]:
    """The valid actions with each ``PROGRAM:j`` named by its rank among the state's alternatives
    (``state.valid_actions`` lists them in the commit rule's ranking), so "commit the runner-up
    output" is one class across cases whatever the sample index. Identity with K = 1."""
    out, i = [], 0
    for a in valid:
        if a.startswith(COMMIT_SAMPLE):
            i += 1
            a = f"{ALT}{i}"
        out.append(a)
    return tuple(out)


def to_canonical(action: str, valid: Sequence[str]) -> str:
    return canonical(valid)[list(valid).index(action)]


def from_canonical(action: str, valid: Sequence[str]) -> str:
    return list(valid)[list(canonical(valid)).index(action)]


def _tie_order(a: str) -> float:
    """Tie-break among equally likely actions: the base order, a ranked alternative after PROGRAM."""
    return ACTIONS.index("PROGRAM") + 0.1 * int(a[len(ALT):]) if a.startswith(ALT) else float(ACTIONS.index(a))


def _make(name: str, seed: int):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    if name == "stump":
        return DecisionTreeClassifier(max_depth=1, random_state=seed)
    if name.startswith("tree_depth"):
        return DecisionTreeClassifier(max_depth=int(name[-1]), min_samples_leaf=2, random_state=seed)
    if name == "logistic":
        from sklearn.impute import SimpleImputer

        # a feature a state does not have (a shape its values lack, a confidence not recorded) is NaN:
        # imputed with a missing-indicator column beside it (the trees and the forest route NaN
        # natively); keep_empty_features: no column dropped; without NaN the imputer is the identity
        return make_pipeline(SimpleImputer(strategy="median", add_indicator=True, keep_empty_features=True),
                             StandardScaler(),
                             LogisticRegression(C=1.0, max_iter=2000, random_state=seed))
    if name == "forest":
        return RandomForestClassifier(n_estimators=100, max_depth=4, min_samples_leaf=2, random_state=seed, n_jobs=1)
    raise ValueError(f"unknown rule model {name!r}")


def _matrix(states: Sequence[State], names: Sequence[str] = FEATURE_NAMES):
    import numpy as np

    # a feature a state does not have (a shape its values lack, a confidence not recorded) is NaN
    # here (the trees and the forest route it; the logistic model imputes it), never a made-up 0
    return np.array([[s.features.get(n, np.nan) for n in names] for s in states], dtype=float)


@dataclass
class RulePolicy:
    """One classifier per decision point (start, after a pass, after a failure).

    Splitting by decision point keeps each classifier's labels to the actions valid there, so a
    shallow tree cannot learn "PROGRAM" where only DIRECT and WRITE exist. A decision point
    with a single training label becomes a constant; one never seen in training falls back to the
    tool-using default (write, repair, commit).
    """

    models: dict  # valid_actions tuple -> fitted classifier or a constant action (str)
    model_name: str
    name: str = "learned_rule"
    feature_names: tuple = FEATURE_NAMES  # the pilot's; plus the tree's when trained on K > 1 states
    # decision point -> the feature columns its model reads, where some are missing in every training
    # state there (e.g. the latest program's confidence before any program): left out, not imputed
    columns: dict = field(default_factory=dict)

    def names_at(self, point) -> tuple:
        cols = self.columns.get(point)
        return self.feature_names if cols is None else tuple(self.feature_names[i] for i in cols)

    def _choose(self, s: State, model, proba) -> str:
        """``proba``: the model's class probabilities for this state (None for a constant or no model)."""
        if model is None:
            return next((a for a in ("WRITE", "FIX", "PROGRAM") if a in s.valid_actions), "DIRECT")
        valid = canonical(s.valid_actions)
        if isinstance(model, str):
            return from_canonical(model if model in valid else valid[0], s.valid_actions)
        p, classes = proba, list(model.classes_)
        scored = [(p[classes.index(a)] if a in classes else -1.0, -_tie_order(a), a) for a in valid]
        return from_canonical(max(scored)[2], s.valid_actions)

    def act(self, states: Sequence[State]) -> list[str]:
        if not states:
            return []
        X = _matrix(states, self.feature_names)
        # one predict_proba per decision point, not per state: a forest's per-call overhead
        # (100 trees) dominated simulation; the probabilities are the same row by row
        groups: dict[tuple, list[int]] = {}
        for i, s in enumerate(states):
            groups.setdefault(canonical(s.valid_actions), []).append(i)
        out: list = [None] * len(states)
        for point, idx in groups.items():
            model = self.models.get(point)
            cols = self.columns.get(point)
            rows = X[idx] if cols is None else X[idx][:, cols]
            probs = (model.predict_proba(rows) if model is not None and not isinstance(model, str)
                     else [None] * len(idx))
            for i, p in zip(idx, probs):
                out[i] = self._choose(states[i], model, p)
        return out

    def describe(self) -> str:
        from sklearn.tree import DecisionTreeClassifier, export_text

        parts = []
        for point, model in sorted(self.models.items()):
            head = f"at {'/'.join(point)}:"
            if isinstance(model, str):
                parts.append(f"{head} always {model}")
            elif isinstance(model, DecisionTreeClassifier):
                parts.append(f"{head}\n{export_text(model, feature_names=list(self.names_at(point)))}")
            elif hasattr(model, "named_steps"):
                lr = model.named_steps["logisticregression"]
                rows = lr.coef_ if len(lr.classes_) > 2 else lr.coef_[:1]
                names = lr.classes_ if len(lr.classes_) > 2 else lr.classes_[1:]
                # the imputer adds a missing-indicator column per feature with a missing value
                cols = model[:-1].get_feature_names_out(list(self.names_at(point)))
                for cls, coefs in zip(names, rows):
                    top = sorted(zip(coefs, cols), key=lambda t: -abs(t[0]))[:5]
                    parts.append(f"{head} logit({cls}) " + ", ".join(f"{n} {c:+.2f}" for c, n in top))
            else:
                imp = sorted(zip(model.feature_importances_, self.names_at(point)), reverse=True)[:5]
                parts.append(f"{head} forest; top features " + ", ".join(f"{n} {v:.2f}" for v, n in imp))
        return "\n".join(parts) or "no decision point seen in training"


def fit_rule(data, model_name: str, seed: int = 0, name: str = "learned_rule") -> RulePolicy:
    """Fit one classifier per decision point on a ``training.TrainingSet`` (regret-weighted)."""
    states, weights = data.states, data.weights
    labels = [to_canonical(l, s.valid_actions) for s, l in zip(states, data.labels)]
    groups: dict[tuple, list[int]] = {}
    for i, s in enumerate(states):
        if len(s.valid_actions) > 1:
            groups.setdefault(canonical(s.valid_actions), []).append(i)
    import numpy as np

    names = features_for(states)
    X = _matrix(states, names) if states else None
    models, columns = {}, {}
    for point, idx in groups.items():
        ys = [labels[i] for i in idx]
        if len(set(ys)) == 1:
            models[point] = ys[0]
            continue
        seen = ~np.isnan(X[idx]).all(axis=0)
        if not seen.all():  # a column no state here records (confidence only): left out at this point
            columns[point] = tuple(int(i) for i in np.flatnonzero(seen))
        rows = X[idx] if point not in columns else X[idx][:, columns[point]]
        model = _make(model_name, seed)
        w = [weights[i] for i in idx]
        kw = {"logisticregression__sample_weight": w} if model_name == "logistic" else {"sample_weight": w}
        model.fit(rows, ys, **kw)
        models[point] = model
    return RulePolicy(models, model_name, name=name, feature_names=names, columns=columns)


def fit_majority(data, name: str = "majority_action") -> RulePolicy:
    """The base-rate null: at each decision point (the same grouping as ``fit_rule``), the action
    with the largest summed regret weight among the training labels there (ties: the tie order of
    ``RulePolicy``). It reads no feature, only which actions are valid; a decision point never seen
    in training falls back to the tool-using default, like the learned rule."""
    totals: dict[tuple, dict[str, float]] = {}
    for s, l, w in zip(data.states, data.labels, data.weights):
        if len(s.valid_actions) > 1:
            point = totals.setdefault(canonical(s.valid_actions), {})
            label = to_canonical(l, s.valid_actions)
            point[label] = point.get(label, 0.0) + w
    models = {p: max(t, key=lambda a: (t[a], -_tie_order(a))) for p, t in totals.items()}
    return RulePolicy(models, "weighted_majority", name=name, feature_names=features_for(data.states))


def dev_score(policy, records) -> tuple[float, int]:
    """Simulated (accuracy, program generations) of a policy on dev records (``TraceEnv.score``)."""
    from controller.env.traceenv import TraceEnv

    return TraceEnv(records).score(policy, records)


def dev_tie(table: dict) -> bool:
    """True when every candidate scored the same dev accuracy and generations: dev chose nothing
    (the first candidate in list order is then used)."""
    keys = {(v["dev_accuracy"], v["dev_program_generations"]) for v in table.values()}
    return len(table) > 1 and len(keys) == 1


def select_rule(data, dev_records, evaluate=dev_score, *, seed: int = 0, name: str = "learned_rule",
                candidates: Sequence[str] = CANDIDATES):
    """Fit every candidate, keep the best on dev. ``evaluate(policy, records) -> (accuracy, generations)``."""
    table, best = {}, None
    for i, cand in enumerate(candidates):
        pol = fit_rule(data, cand, seed, name=name)
        acc, gens = evaluate(pol, dev_records)
        table[cand] = {"dev_accuracy": acc, "dev_program_generations": gens}
        key = (acc, -gens, -i)
        if best is None or key > best[0]:
            best = (key, pol)
    return best[1], table
