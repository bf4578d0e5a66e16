"""Formatting shared by the report's sections: one way to print a share, an interval, a p-value,
a count and a table."""
from __future__ import annotations

from typing import Mapping

from controller.env.registry import ordered as ordered_policies

SPLIT_ORDER = ("train", "dev", "test")


def cases_have(n) -> str:
    """'1 case has' / '3 cases have': the count a sentence opens with."""
    return f"{n} case has" if n == 1 else f"{n} cases have"


def pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def ci_pct(ci) -> str:
    """An interval of shares, in percent."""
    return "n/a" if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def interval(ci, digits: int = 3) -> str:
    """An interval as it is (empty when there is none)."""
    return "" if not ci else f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def fixed(x, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def num(x, digits: int = 0) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.{digits}f}" if isinstance(x, float) or digits else f"{x:,}"


def p_value(p) -> str:
    """Three decimals, or scientific below 0.001 (an exact p of 2.4e-04 is not "< 0.001")."""
    return "n/a" if p is None else (f"{p:.3f}" if p >= 0.001 else f"{p:.1e}")


def pp(x) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f} pp"


def table(headers: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def splits(mapping: Mapping) -> list[str]:
    return [s for s in SPLIT_ORDER if s in mapping] + sorted(s for s in mapping if s not in SPLIT_ORDER)


def results(summary: Mapping, split: str) -> list[tuple[str, Mapping]]:
    pr = summary.get("policy_results") or {}
    return [(p, pr[p][split]) for p in ordered_policies(pr) if split in (pr[p] or {})]


def exact(r: Mapping) -> str:
    return f"{r.get('exact', 0)}/{r.get('n', 0)}"


def policy_row(name: str, r: Mapping) -> list:
    return [f"`{name}`", exact(r), r.get("n_families", "n/a"),
            f"{pct(r.get('accuracy'))} {ci_pct(r.get('accuracy_ci95'))}", ci_pct(r.get("accuracy_ci95_family")),
            num(r.get("program_generations")), num(r.get("repair_actions")),
            num(r.get("program_commits")), num(r.get("direct_miss_recoveries")),
            num(r.get("direct_correct_losses")), pct(r.get("program_precision")),
            num(r.get("generated_tokens")), num(r.get("work")), num(r.get("sandbox_ms"), 1)]


def policy_headers(summary: Mapping) -> list[str]:
    """Column names; every budget column names its unit (work's comes from the summary)."""
    work = (summary.get("cost_units") or {}).get("work", "search nodes / tokens")
    return ["Policy", "Exact", "Families", "Accuracy [Wilson 95%, cases]", "[95% CI, family bootstrap]",
            "Program generations", "Repairs (FIX rounds)", "Program commits", "Recoveries", "Losses",
            "Program precision", "Completion tokens", f"Work ({work})", "Sandbox (ms)"]


def policy_table(summary: Mapping) -> str:
    """The table a run prints at its end (and README's healthy quickstart shows): per policy, dev and
    test cases right, test program generations and repairs."""
    out = [f"{'policy':24s} {'dev':>9s} {'test':>9s} {'test gens':>9s} {'repairs':>8s}"]
    for name, r in summary["policy_results"].items():
        d, t = r["dev"], r["test"]
        out.append(f"{name:24s} {d['exact']:>3d}/{d['n']:<5d} {t['exact']:>3d}/{t['n']:<5d} "
                   f"{t['program_generations']:>9d} {t['repair_actions']:>8d}")
    return "\n".join(out)


def which_test_decides(ci, verdict: str | None, p_family=None, p_holm=None, n_families=None) -> str:
    """A clause for an interval and a verdict that seem to disagree ('' when they agree): the
    verdict is the family-level sign-flip test (Holm-adjusted), the interval a percentile family
    bootstrap, shown for size only; the two can part near the edge, and the test decides."""
    if not ci or ci[0] is None or ci[1] is None or not verdict:
        return ""
    excludes_zero = ci[0] > 0 or ci[1] < 0
    noise = verdict.startswith("within noise")
    decided = verdict.split(" (")[0] in ("better", "worse", "cheaper", "costlier")
    if not (noise or decided) or excludes_zero == decided:  # agree, or a verdict no test gave (undecidable, not run)
        return ""
    ps = f"p = {p_value(p_family)}" + ("" if p_holm is None else f", Holm-adjusted {p_value(p_holm)}")
    fams = f" over {n_families} families" if n_families else ""
    if noise:
        return (f" (the interval excludes 0 but the verdict is the family-level sign-flip test{fams}, {ps}, which "
                "decides: a percentile bootstrap over few families is narrower than the exact test, and Holm "
                "adjusts the test, not the interval)")
    return (f" (the interval includes 0 but the verdict is the family-level sign-flip test{fams}, {ps}, which "
            "decides; the bootstrap interval is shown for size only)")
