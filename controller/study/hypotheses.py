"""Pre-registered hypotheses: a study file names the claims (and the cost unit) before a run.

A study file (``--study FILE``, TOML or JSON) holds ``name``, ``cost_unit``, ``alpha`` and a list
``hypotheses``, each with ``name``, ``primary`` (bool), ``kind`` (the statistic), ``policies``,
``unit`` (a cost unit; default the study's), ``split`` (``test``, ``dev`` or ``cv_pooled``),
optional ``margin`` (non-inferiority margin in accuracy, default 0) and ``description``.

Kinds (every test is the family-level sign-flip test of ``stats`` on per-case differences summed
per family; estimates are per-case means with a family-bootstrap interval):

* ``accuracy_diff`` [a, b]: right_a - right_b. Verdict ``better`` / ``worse`` / ``within noise``.
* ``cost_saving`` [a, b]: cost_b - cost_a in ``unit`` (positive: a is cheaper).
  Verdict ``cheaper`` / ``costlier`` / ``within noise``.
* ``cheaper_no_loss`` [a, b]: the cost test above, and a non-inferiority condition on accuracy:
  the exact binomial lower bound of the accuracy difference (``stats.noninferiority_lower_bound``:
  Clopper-Pearson lower bound of the win share minus the Clopper-Pearson upper bound of the loss
  share, each at alpha / 2) stays above -margin. A percentile bootstrap is anti-conservative for
  rare losses (one lost case in 225: -1.3 pp against an exact -2.45 pp), so it is kept beside the
  bound (``accuracy_interval``) for information only. Verdict ``supported`` only when both hold,
  else ``not supported`` with the reason; ``noninferiority`` names the method, wins, losses, n and
  the bound.
* ``beats_random_mix`` [learner, a, b] (or [learner]: the fixed-policy hull's pair at the
  learner's cost): right_L - ((1 - w) right_a + w right_b), w matching the mix's expected cost
  to the learner's in ``unit`` (``routing``). Verdict ``better`` / ``worse`` / ``within noise``.

A hypothesis the data cannot decide (nothing right anywhere on its split, too few families for
the test to reject, a no-loss bound that cannot pass at its n) gets the verdict ``undecidable (the
reason)`` and the reason in ``undecidable`` (``decidable.py``); its p-values are still reported.

Holm runs over distinct tests only, primaries and secondaries as two families: hypotheses whose
per-family difference vectors are identical (or negated) are one test (``merged_with``); a
hypothesis that involves the hindsight oracle, or whose policies have identical outcome vectors
(a tie, by construction as with ``visible_disagree_rule`` == ``always_tool_visible`` when programs
never equal the direct answer), is reported with the reason and left out of the count.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from controller.study.routing import UNITS, case_vectors, hull_value, mix_weight, point, upper_hull
from controller.study.comparators import CASE_ASSUMES, family_bound, max_losses_tolerated
from controller.study.decidable import UNDECIDABLE, undecidable_reason
from controller.study.stats import (ALPHA, EXCLUDE_ORACLE, NONINFERIORITY_METHOD, ORACLE, comparison_key, distinct_holm,
                                    family_bootstrap, family_sign_flip_p, noninferiority_lower_bound)

KINDS = {"accuracy_diff": 2, "cost_saving": 2, "cheaper_no_loss": 2, "beats_random_mix": (1, 3)}
SPLITS = ("test", "dev", "cv_pooled")
EXCLUDE_SAME = "identical outcome vectors (right and cost on every case): nothing to test"
TOP_KEYS = frozenset({"name", "cost_unit", "alpha", "hypotheses", "split_seeds"})
HYPOTHESIS_KEYS = frozenset({"name", "primary", "kind", "policies", "unit", "split", "margin", "description"})
SPLIT_SEED_KEYS = frozenset({"min_supported"})
# the verdict a hypothesis is "supported" with at one split seed, and its opposite
POSITIVE = {"accuracy_diff": "better", "cost_saving": "cheaper", "cheaper_no_loss": "supported",
            "beats_random_mix": "better"}
NEGATIVE = {"accuracy_diff": "worse", "cost_saving": "costlier", "beats_random_mix": "worse"}


class StudyError(ValueError):
    """A study file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class Hypothesis:
    name: str
    primary: bool
    kind: str
    policies: tuple[str, ...]
    unit: str = "generations"
    split: str = "cv_pooled"
    margin: float = 0.0
    description: str = ""


@dataclass(frozen=True)
class Study:
    name: str
    cost_unit: str = "generations"
    alpha: float = ALPHA
    hypotheses: tuple[Hypothesis, ...] = field(default_factory=tuple)
    source: str = "built-in default"
    min_supported: int | None = None  # [split_seeds] min_supported; None: every split seed


# ----------------------------------------------------------------------------- loading


def parse_study(raw: Mapping, source: str, known_policies: Sequence[str] | None = None) -> Study:
    """Validate a decoded study; every problem raises ``StudyError`` naming ``source``."""
    def bad(msg):
        return StudyError(f"{source}: {msg}")

    if not isinstance(raw, Mapping):
        raise bad("the top level must be a table/object")
    extra = sorted(set(raw) - TOP_KEYS)
    if extra:
        raise bad(f"unknown key {extra[0]!r} (known: {', '.join(sorted(TOP_KEYS))})")
    rule = raw.get("split_seeds", {})
    if not isinstance(rule, Mapping):
        raise bad("'split_seeds' must be a table/object, e.g. [split_seeds] min_supported = 4")
    extra = sorted(set(rule) - SPLIT_SEED_KEYS)
    if extra:
        raise bad(f"unknown key {extra[0]!r} in [split_seeds] (known: {', '.join(sorted(SPLIT_SEED_KEYS))})")
    min_supported = rule.get("min_supported")
    if min_supported is not None and (isinstance(min_supported, bool) or not isinstance(min_supported, int)
                                      or min_supported < 1):
        raise bad(f"[split_seeds] min_supported must be an integer >= 1, got {min_supported!r}")
    unit = raw.get("cost_unit", "generations")
    if unit not in UNITS:
        raise bad(f"cost_unit {unit!r} is not one of {', '.join(UNITS)}")
    alpha = raw.get("alpha", ALPHA)
    if not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise bad(f"alpha must be a number in (0, 1), got {alpha!r}")
    items = raw.get("hypotheses")
    if not isinstance(items, list) or not items:
        raise bad("needs a non-empty list 'hypotheses'")
    hyps, names = [], set()
    for i, h in enumerate(items):
        if not isinstance(h, Mapping):
            raise bad(f"hypotheses[{i}] is not a table/object")
        name = h.get("name")
        extra = sorted(set(h) - HYPOTHESIS_KEYS)
        if extra:
            raise bad(f"hypotheses[{i}] ({name!r}): unknown key {extra[0]!r} "
                      f"(known: {', '.join(sorted(HYPOTHESIS_KEYS))})")
        if not isinstance(name, str) or not name or name in names:
            raise bad(f"hypotheses[{i}]: 'name' must be a unique non-empty string, got {name!r}")
        names.add(name)
        kind = h.get("kind")
        if kind not in KINDS:
            raise bad(f"hypothesis {name!r}: kind {kind!r} is not one of {', '.join(KINDS)}")
        pols = h.get("policies")
        want = KINDS[kind]
        if (not isinstance(pols, list) or not all(isinstance(p, str) for p in pols)
                or len(pols) not in (want if isinstance(want, tuple) else (want,))):
            raise bad(f"hypothesis {name!r}: kind {kind} takes {want} policy names, got {pols!r}")
        if len(set(pols)) != len(pols):
            raise bad(f"hypothesis {name!r}: a policy is compared with itself ({pols!r})")
        unknown = [p for p in pols if known_policies is not None and p not in known_policies]
        if unknown:
            raise bad(f"hypothesis {name!r}: unknown policy {unknown[0]!r}")
        hunit, split = h.get("unit", unit), h.get("split", "cv_pooled")
        if hunit not in UNITS:
            raise bad(f"hypothesis {name!r}: unit {hunit!r} is not one of {', '.join(UNITS)}")
        if split not in SPLITS:
            raise bad(f"hypothesis {name!r}: split {split!r} is not one of {', '.join(SPLITS)}")
        primary = h.get("primary", False)
        margin = h.get("margin", 0.0)
        if not isinstance(primary, bool) or not isinstance(margin, (int, float)) or margin < 0:
            raise bad(f"hypothesis {name!r}: 'primary' must be true/false and 'margin' a number >= 0")
        hyps.append(Hypothesis(name, primary, kind, tuple(pols), hunit, split, float(margin),
                               str(h.get("description", ""))))
    if not any(h.primary for h in hyps):
        raise bad("no hypothesis is marked primary = true")
    return Study(str(raw.get("name", Path(source).stem)), unit, float(alpha), tuple(hyps), source, min_supported)


def load_study(path: str, known_policies: Sequence[str] | None = None) -> Study:
    """Read a ``.toml`` (tomllib) or ``.json`` study file."""
    p = Path(path)
    try:
        text = p.read_bytes()
    except OSError as err:
        raise StudyError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        if p.suffix.lower() == ".toml":
            import tomllib

            raw = tomllib.loads(text.decode("utf-8"))
        else:
            raw = json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise StudyError(f"{path}: not valid {'TOML' if p.suffix.lower() == '.toml' else 'JSON'} "
                         f"({str(err).splitlines()[0]})") from None
    return parse_study(raw, str(path), known_policies)


def default_study(cost_unit: str = "generations", split: str = "cv_pooled") -> Study:
    """Used when no ``--study`` is given (the report says it was not pre-registered)."""
    raw = {"name": "default", "cost_unit": cost_unit, "hypotheses": [
        {"name": "rule_cheaper_than_always_tool", "primary": True, "kind": "cheaper_no_loss",
         "policies": ["learned_rule", "always_tool_visible"], "split": split, "margin": 0.02},
        {"name": "rule_beats_random_mix", "primary": True, "kind": "beats_random_mix",
         "policies": ["learned_rule", "always_tool_visible", "direct_only"], "split": split},
        {"name": "tools_beat_direct", "primary": False, "kind": "accuracy_diff",
         "policies": ["always_tool_visible", "direct_only"], "split": split}]}
    return parse_study(raw, "built-in default")


# ----------------------------------------------------------------------------- one statistic


def _shared(vecs: Sequence[Mapping]) -> list[str]:
    ids = set(vecs[0])
    for v in vecs[1:]:
        ids &= set(v)
    return sorted(ids)


def statistic(h: Hypothesis, by_policy: Mapping[str, Sequence[Mapping]], direct_tokens: Mapping[str, int],
              fixed: Sequence[str] = (), seed: int = 0, alpha: float = ALPHA) -> dict:
    """Per-case differences, per-family test and estimate of one hypothesis on its split's outcomes."""
    missing = [p for p in h.policies if p not in by_policy]
    if missing:
        return {"skipped": f"policy {missing[0]} was not run on {h.split}"}
    vecs = {p: case_vectors(by_policy[p], h.unit, direct_tokens) for p in h.policies}
    extra: dict = {}
    pols = list(h.policies)
    if h.kind == "beats_random_mix":
        allv = {p: case_vectors(by_policy[p], h.unit, direct_tokens) for p in fixed if p in by_policy}
        vecs.update(allv)
        pts = {p: point(v, n_resamples=200) for p, v in vecs.items()}
        me = pts[pols[0]]["cost"]
        if len(pols) == 1:
            hv = hull_value(upper_hull([(pts[p]["cost"], pts[p]["accuracy"], p) for p in allv]), me)
            if hv is None:
                return {"skipped": "the learner costs less than every fixed policy: no mix matches it"}
            # past the hull's last vertex the mix is its most accurate policy itself (w = 1 on it):
            # a learner that spends more is compared with what that cheaper policy gets
            a, b, w = hv[1], hv[2], hv[3]
            pols += [a, b]
        else:
            a, b = sorted(pols[1:], key=lambda p: pts[p]["cost"])
            w = mix_weight(me, pts[a]["cost"], pts[b]["cost"])
        if w is None:
            return {"skipped": f"{pols[0]}'s cost {me:.3f} is outside [{a}, {b}]'s range: no matched mix"}
        extra = {"mix": [a, b], "w": w}
    ids = _shared([vecs[p] for p in pols])
    if not ids:
        return {"skipped": f"no scored case shared by {', '.join(pols)} on {h.split}"}
    fams = [vecs[pols[0]][i][2] for i in ids]
    acc_d = [float(vecs[pols[0]][i][0]) - float(vecs[pols[1]][i][0]) for i in ids] if len(pols) >= 2 else None
    if h.kind == "accuracy_diff":
        d = acc_d
    elif h.kind in ("cost_saving", "cheaper_no_loss"):
        d = [vecs[pols[1]][i][1] - vecs[pols[0]][i][1] for i in ids]
    else:
        a, b, w = extra["mix"][0], extra["mix"][1], extra["w"]
        mix = [(1 - w) * vecs[a][i][0] + w * vecs[b][i][0] for i in ids]
        d = [float(vecs[pols[0]][i][0]) - m for i, m in zip(ids, mix)]
        extra.update(learner_exact=int(sum(vecs[pols[0]][i][0] for i in ids)), mix_expected_exact=float(sum(mix)))
    same = all(vecs[p][i][:2] == vecs[h.policies[0]][i][:2] for p in h.policies[1:] for i in ids)
    out = {"n": len(ids), "n_families": len(set(fams)), "estimate": sum(d) / len(d),
           "interval": family_bootstrap(fams, d, seed=seed), "p_family": family_sign_flip_p(fams, d, seed=seed),
           "key": (("accuracy" if h.kind in ("accuracy_diff", "beats_random_mix") else f"cost:{h.unit}"),
                   comparison_key(fams, d)),
           "identical": same and len(h.policies) > 1, "families": fams, "diffs": d, **extra}
    if h.kind == "cheaper_no_loss":
        out["accuracy_diff"] = sum(acc_d) / len(acc_d)
        out["accuracy_interval"] = family_bootstrap(fams, acc_d, seed=seed)  # for information; not the verdict
        wins, losses = sum(1 for x in acc_d if x > 0), sum(1 for x in acc_d if x < 0)
        out["noninferiority"] = {"method": NONINFERIORITY_METHOD, "wins": wins, "losses": losses, "n": len(acc_d),
                                 "alpha": alpha, "margin": h.margin,
                                 "lower_bound": noninferiority_lower_bound(wins, losses, len(acc_d), alpha),
                                 "assumes": CASE_ASSUMES,
                                 "max_losses_tolerated": max_losses_tolerated(len(acc_d), h.margin, alpha),
                                 "family_level": family_bound(fams, acc_d, alpha)}
    return out


def _verdict(h: Hypothesis, s: Mapping, p: float, alpha: float) -> str:
    if s.get("skipped"):
        return "not run"
    sig = p < alpha and s["estimate"] != 0
    if h.kind == "cheaper_no_loss":
        lo = (s.get("noninferiority") or {}).get("lower_bound")
        if not (sig and s["estimate"] > 0):
            return "not supported (no significant saving)"
        if lo is None or lo < -h.margin - 1e-12:
            return f"not supported (an accuracy loss above the margin {h.margin:g} is not excluded)"
        return "supported"
    if not sig:
        return "within noise"
    if h.kind == "cost_saving":
        return "cheaper" if s["estimate"] > 0 else "costlier"
    return "better" if s["estimate"] > 0 else "worse"


# ----------------------------------------------------------------------------- the study


def evaluate_study(study: Study, outcomes_by_split: Mapping[str, Mapping[str, Sequence[Mapping]]],
                   direct_tokens: Mapping[str, int] | None = None, fixed: Sequence[str] = (),
                   seed: int = 0) -> list[dict]:
    """``hypotheses`` summary key: primaries first, each with p_family, p_holm (distinct tests,
    primaries and secondaries as separate Holm families) and verdict."""
    stats = []
    by_split_of = lambda h: outcomes_by_split.get(h.split) or {}
    for h in study.hypotheses:
        by_policy = outcomes_by_split.get(h.split)
        s = ({"skipped": f"split {h.split} was not run (cv_pooled needs --cv-folds)"} if by_policy is None
             else statistic(h, by_policy, direct_tokens or {}, fixed, seed, study.alpha))
        stats.append(s)
    rows: list[dict] = [{}] * len(stats)
    for primary in (True, False):
        idx = [i for i, h in enumerate(study.hypotheses) if h.primary == primary]
        why = []
        for i in idx:
            h, s = study.hypotheses[i], stats[i]
            why.append("not run: " + s["skipped"] if s.get("skipped") else EXCLUDE_ORACLE if ORACLE in h.policies
                       else EXCLUDE_SAME if s["identical"] else None)
        keys = [stats[i].get("key", ("skipped", ())) for i in idx]
        adj, merged = distinct_holm(keys, [stats[i].get("p_family", 1.0) for i in idx], why)
        merged_with = {idx[k]: [study.hypotheses[idx[j]].name for j in g if j != k] for g in merged for k in g}
        size = len({k for k, w in zip(keys, why) if w is None and k[1]})
        for k, i in enumerate(idx):
            h, s = study.hypotheses[i], stats[i]
            row = {"name": h.name, "primary": h.primary, "statistic": h.kind, "policies": list(h.policies),
                   "unit": h.unit, "split": h.split, "description": h.description,
                   "p_family": s.get("p_family"), "p_holm": None if s.get("skipped") else adj[k],
                   "holm_family_size": size, "verdict": _verdict(h, s, adj[k], study.alpha)}
            why_not = undecidable_reason(h.kind, h.policies, h.split, s, by_split_of(h), h.margin, study.alpha)
            if why_not:  # the data cannot decide: said so, in place of a verdict that reads as a finding
                row["undecidable"], row["verdict"] = why_not, f"{UNDECIDABLE} ({why_not})"
            for f in ("estimate", "interval", "n", "n_families", "mix", "w", "learner_exact", "mix_expected_exact",
                      "accuracy_diff", "accuracy_interval", "noninferiority"):
                if f in s:
                    row[f] = s[f]
            if why[k] is not None:
                row["excluded"] = why[k]
            if merged_with.get(i):
                row["merged_with"] = merged_with[i]
            if h.kind == "cheaper_no_loss":
                row["margin"] = h.margin
            row["_families"], row["_diffs"] = s.get("families"), s.get("diffs")  # for power; dropped by the caller
            rows[i] = row
    return sorted(rows, key=lambda r: not r["primary"])


# ----------------------------------------------------------------------------- over split seeds


def split_seed_rule(study: Study, n_seeds: int) -> dict:
    """How per-split-seed verdicts become one: the study file's ``[split_seeds] min_supported``, else
    every split seed."""
    if study.min_supported is None:
        return {"min_supported": n_seeds, "of": n_seeds, "source": "default",
                "rule": f"supported at all {n_seeds} split seeds (the study file states no rule)"}
    k = study.min_supported
    words = f"supported at >= {k} of {n_seeds} split seeds ([split_seeds] min_supported = {k} in {study.source})"
    if k > n_seeds:
        words += f"; only {n_seeds} split seeds ran, so the rule cannot be met"
    return {"min_supported": k, "of": n_seeds, "source": study.source, "rule": words}


def combine_verdicts(kind: str, verdicts: Sequence[str], min_supported: int) -> tuple[str, int]:
    """(verdict by the rule, number of split seeds with the positive verdict)."""
    pos_word, neg_word = POSITIVE[kind], NEGATIVE.get(kind)
    ran = [v for v in verdicts if v != "not run"]
    n = len(verdicts)
    pos = sum(1 for v in verdicts if v == pos_word)
    neg = sum(1 for v in verdicts if neg_word and v == neg_word)
    if not ran:
        return "not run", 0
    missing = f"; not run at {n - len(ran)}" if len(ran) < n else ""
    if pos >= min_supported:
        return pos_word, pos
    if neg_word and neg >= min_supported:
        return neg_word, pos
    if len(set(ran)) == 1 and not missing:
        return ran[0], pos
    if all(v.startswith(UNDECIDABLE) for v in ran):  # undecidable at every split seed (reasons may differ in n)
        return ran[0] + missing, pos
    if kind == "cheaper_no_loss":
        return f"not supported ({pos_word} at {pos} of {n} split seeds{missing}; the rule needs {min_supported})", pos
    return (f"within noise ({pos_word} at {pos}, {neg_word or 'opposite'} at {neg} of {n} split seeds{missing}; "
            f"the rule needs {min_supported})"), pos


def _seed_entry(seed: int, row: Mapping) -> dict:
    out = {"split_seed": seed, "verdict": row["verdict"], "p_family": row.get("p_family"),
           "p_holm": row.get("p_holm"), "estimate": row.get("estimate")}
    if row.get("statistic") == "cheaper_no_loss":
        out["accuracy_diff"] = row.get("accuracy_diff")
        out["noninferiority_lower_bound"] = (row.get("noninferiority") or {}).get("lower_bound")
    if row["verdict"] == "not run":
        out["skipped"] = row.get("excluded", "not run")
    return out


def attach_split_seeds(rows: list[dict], study: Study, outcomes_by_split: Mapping[str, Mapping],
                       split_seed_records: Sequence[Mapping] | None, first_split_seed: int | None,
                       direct_tokens: Mapping[str, int] | None = None, fixed: Sequence[str] = (),
                       seed: int = 0) -> list[dict]:
    """Evaluate every ``cv_pooled`` hypothesis at every split seed and combine the verdicts.

    ``split_seed_records`` is ``split_seeds.split_seed_outcomes``' list (one entry per split seed
    with its per-case ``records``); without it the run's one CV (``first_split_seed``) is the only
    split seed. At each split seed the whole study is evaluated again with that seed's pooled CV
    outcomes (dev and test hypotheses unchanged), so Holm stays over the distinct hypotheses within
    one split seed. Each ``cv_pooled`` row gets ``per_split_seed`` (a list of {split_seed, verdict,
    p_family, p_holm, estimate, ...; ``skipped`` when not run there}), ``supported_at`` ("k of N"),
    ``split_seed_rule`` (words) and ``verdict`` by the rule; the single-split-seed verdict moves to
    ``verdict_first_split_seed``. Rows of other splits get ``per_split_seed`` None. Mutates and
    returns ``rows``."""
    per_seed: list[tuple[int, dict[str, dict]]] = []
    if split_seed_records:
        for entry in split_seed_records:
            by_policy: dict[str, list] = {}
            for r in entry["records"]:
                by_policy.setdefault(r["policy"], []).append(r)
            splits = {k: v for k, v in outcomes_by_split.items() if k != "cv_pooled"}
            splits["cv_pooled"] = by_policy
            seed_rows = evaluate_study(study, splits, direct_tokens, [p for p in fixed if p in by_policy], seed)
            for r in seed_rows:
                r.pop("_families", None), r.pop("_diffs", None)
            per_seed.append((int(entry["split_seed"]), {r["name"]: r for r in seed_rows}))
    elif "cv_pooled" in outcomes_by_split:
        per_seed.append((int(first_split_seed or 0), {r["name"]: r for r in rows}))
    rule = split_seed_rule(study, len(per_seed))
    kinds = {h.name: h.kind for h in study.hypotheses}
    for row in rows:
        if row["split"] != "cv_pooled":
            row["per_split_seed"], row["supported_at"] = None, None
            row["split_seed_rule"] = f"not applicable: split {row['split']} does not depend on the split seed"
            continue
        entries = []
        for s, by_name in per_seed:
            r = by_name[row["name"]]
            e = _seed_entry(s, r)
            if r["verdict"] == "not run" and r.get("excluded", "").startswith("not run: policy"):
                e["skipped"] = r["excluded"].replace("on cv_pooled", f"at split seed {s}")
            entries.append(e)
        row["per_split_seed"] = entries
        row["verdict_first_split_seed"] = row["verdict"]
        if not entries:
            row["supported_at"], row["split_seed_rule"] = None, "no split seed ran (no cross-validation)"
            continue
        v, k = combine_verdicts(kinds[row["name"]], [e["verdict"] for e in entries], rule["min_supported"])
        row["verdict"], row["supported_at"], row["split_seed_rule"] = v, f"{k} of {len(entries)}", rule["rule"]
    return rows
