"""Can the data decide a hypothesis at all? "undecidable", with the reason, where they cannot.

A verdict of "within noise" or "not supported" says the data looked and found nothing; on data
that could not have found anything it says more than they hold. Three cases are named instead:

* **nothing right**: no case of the hypothesis's split has a right answer anywhere (the hindsight
  oracle gets none): an accuracy comparison is 0 = 0 by construction, and a cheaper-at-no-loss claim
  is met by answering directly at once. (A pure ``cost_saving`` claim is still decidable.)
* **the family test cannot reject**: with F families the two-sided sign-flip test cannot go below
  2 / 2^F (``stats.min_attainable_p``); at or above alpha no effect can be significant.
* **the no-loss bound cannot pass** (``cheaper_no_loss``): the exact bound
  (``stats.noninferiority_lower_bound``) stays below -margin even with zero losses and a win on
  every case the learner could win (where the comparator is wrong and the oracle right). Before
  the traces exist (``registration_warnings``) the wins are unknown: the warning gives the bound
  with no win and the wins it would take.

Pure functions; ``registration_warnings`` is what the run prints before it traces.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.study.stats import ORACLE, min_attainable_p, noninferiority_lower_bound

UNDECIDABLE = "undecidable"


def wins_needed(n: int, margin: float, alpha: float) -> int | None:
    """The fewest wins (with no loss) at which the exact bound at n reaches -margin (None: none do)."""
    for w in range(n + 1):
        lo = noninferiority_lower_bound(w, 0, n, alpha)
        if lo is not None and lo >= -margin - 1e-12:
            return w
    return None


def bound_words(n: int, margin: float, alpha: float, max_wins: int | None) -> str | None:
    """Why a no-loss claim cannot pass at n with at most ``max_wins`` wins (None: it can)."""
    need = wins_needed(n, margin, alpha)
    if need is not None and (max_wins is None and need == 0 or max_wins is not None and need <= max_wins):
        return None
    lo = noninferiority_lower_bound(max_wins or 0, 0, n, alpha)
    if max_wins is None:
        return (f"cannot pass at n = {n} without a win: with zero losses the exact no-loss bound is {lo:+.3f}, below "
                f"-{margin:g}" + (f"; it takes at least {need} wins (cases the comparator gets wrong)" if need else ""))
    won = f"a win on all {max_wins} cases it could win" if max_wins else "no case it could win"
    return (f"cannot pass at n = {n}: even with zero losses and {won}, the exact no-loss bound is {lo:+.3f}, "
            f"below -{margin:g}")


def _right(outs: Sequence[Mapping]) -> dict[str, bool]:
    return {o["case_id"]: bool(o["correct"]) for o in outs if o.get("correct") is not None}


def undecidable_reason(kind: str, policies: Sequence[str], split: str, stat: Mapping,
                       by_policy: Mapping[str, Sequence[Mapping]], margin: float, alpha: float) -> str | None:
    """The reason a hypothesis (its ``statistic`` result ``stat``) cannot be decided, else None."""
    if stat.get("skipped"):
        return None
    oracle = _right(by_policy[ORACLE]) if ORACLE in by_policy else None
    if oracle is None:  # no oracle ran: the union of the compared policies is the most there is
        oracle = {}
        for p in policies:
            for cid, ok in _right(by_policy.get(p, ())).items():
                oracle[cid] = oracle.get(cid, False) or ok
    if kind != "cost_saving" and oracle and not any(oracle.values()):
        return f"no right answer anywhere on {split}: the hindsight oracle gets 0 of {len(oracle)}"
    floor = min_attainable_p(int(stat.get("n_families") or 0))
    if floor >= alpha:
        return (f"{stat.get('n_families', 0)} families: the family-level sign-flip test cannot go below p = "
                f"{floor:.2g}, not below alpha {alpha:g}, whatever the effect")
    if kind == "cheaper_no_loss":
        b = _right(by_policy.get(policies[1], ()))
        winnable = sum(1 for cid, ok in b.items() if not ok and oracle.get(cid))
        return bound_words(int(stat["n"]), margin, alpha, winnable)
    return None


def registration_warnings(study, n_cases: int, n_families: int, n_test: int | None = None) -> list[str]:
    """What the study file cannot decide at this case count, said before any trace is made.

    ``n_cases``/``n_families``: the scored cases and families the run will trace; ``n_test``: the
    test split's cases when known (else the test and dev hypotheses are checked at ``n_cases``, an
    upper bound: a claim that fails there fails on fewer)."""
    out = []
    floor = min_attainable_p(n_families)
    for h in study.hypotheses:
        n = n_cases if h.split == "cv_pooled" or n_test is None else n_test
        head = f"hypothesis {h.name!r} ({h.kind}, {h.split})"
        if floor >= study.alpha:
            out.append(f"{head} is {UNDECIDABLE} at {n_families} families: the family-level test cannot go below "
                       f"p = {floor:.2g}")
        elif h.kind == "cheaper_no_loss":
            why = bound_words(n, h.margin, study.alpha, None)
            if why:
                bound = "" if h.split == "cv_pooled" or n_test is not None else " (at most)"
                out.append(f"{head} {why}{bound}")
    return out
