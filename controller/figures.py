"""The five report figures, drawn from a ``final_summary.json``-shaped dict.

``write_figures(summary, out_dir)`` writes exactly ``heldout_accuracy.png``,
``dev_vs_test.png``, ``tool_budget.png``, ``recoveries_losses.png`` and
``accuracy_vs_compute.png``. Each is saved under a temporary name in ``out_dir`` and renamed
into place, so a reader never sees half a PNG. Missing splits or policies give an empty panel
with a note, never an error. matplotlib is imported inside the functions (Agg backend) so
importing the package stays fast.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Mapping

from .stats import wilson_ci

FIGURE_NAMES = (
    "heldout_accuracy.png",
    "dev_vs_test.png",
    "tool_budget.png",
    "recoveries_losses.png",
    "accuracy_vs_compute.png",
)
# Known policies first, in the order the report discusses them; new ones follow sorted.
POLICY_ORDER = (
    "direct_only", "always_tool_visible", "visible_disagree_rule", "learned_rule",
    "lora_seq_policy", "lora_shuffled_seq", "oracle_seq",
)
ORACLE = "oracle_seq"
# Frontier cost kinds and their per-case unit: tokens are counted in thousands.
COST_UNITS = {"generations": "program generations", "tokens": "thousand generated tokens",
              "work": "thousand work units (search nodes for synth, tokens for models)"}


# ----------------------------------------------------------------------------- data helpers


def ordered_policies(policy_results: Mapping) -> list[str]:
    """Policies in report order: the known ones first, then any others alphabetically."""
    known = [p for p in POLICY_ORDER if p in policy_results]
    return known + sorted(p for p in policy_results if p not in POLICY_ORDER)


def _split_rows(summary: Mapping, split: str) -> list[tuple[str, Mapping]]:
    results = summary.get("policy_results") or {}
    return [(p, results[p][split]) for p in ordered_policies(results)
            if isinstance(results[p], Mapping) and split in results[p]]


def _acc(res: Mapping) -> float:
    return res.get("accuracy") or 0.0


def _err(res: Mapping) -> tuple[float, float]:
    """Error bar lengths below and above the accuracy: the family bootstrap interval when the
    summary has it (families are the unit the split is drawn in), else the Wilson interval."""
    acc = _acc(res)
    lo, hi = (res.get("accuracy_ci95_family") or res.get("accuracy_ci95")
              or wilson_ci(res.get("exact", 0), res.get("n", 0)))
    return max(0.0, acc - lo), max(0.0, hi - acc)


def _n(rows: list[tuple[str, Mapping]]) -> int:
    return max((r.get("n", 0) for _, r in rows), default=0)


def cost_per_case(res: Mapping, cost: str) -> float:
    """Program generations (or thousand generated tokens, or thousand work units) per traced case,
    unscored included.

    Frontier points carry their ``cost`` in the same unit, so policies and frontiers share
    one x axis.
    """
    cases = (res.get("n") or 0) + (res.get("unscored") or 0)
    if cost == "tokens":
        total = (res.get("generated_tokens") or 0) / 1000
    elif cost == "work":
        total = (res.get("work") or 0) / 1000
    else:
        total = res.get("program_generations") or 0
    return total / cases if cases else 0.0


def _frontier_cost(summary: Mapping) -> str:
    kinds = [f.get("cost", "generations") for f in (summary.get("frontier") or {}).values()]
    return kinds[0] if kinds else "generations"


# ----------------------------------------------------------------------------- drawing


def _label(policy: str) -> str:
    return policy.replace("_", "\n", 1) if len(policy) > 14 else policy


def _empty(ax, text: str = "no results for this split") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)


def _heldout(ax, summary: Mapping) -> None:
    rows = _split_rows(summary, "test")
    family = any(r.get("accuracy_ci95_family") for _, r in rows)
    fams = max((r.get("n_families") or 0 for _, r in rows), default=0)
    ax.set_title(f"Held-out test accuracy (n={_n(rows)}" + (f", {fams} families, 95% family-bootstrap intervals)"
                                                            if family else ", 95% Wilson intervals)"))
    if not rows:
        return _empty(ax)
    xs = range(len(rows))
    errs = list(zip(*[_err(r) for _, r in rows]))
    ax.bar(xs, [_acc(r) for _, r in rows], yerr=errs, capsize=4, color="tab:blue")
    # exact/n under each name: a bar of height 0 has nothing to write on.
    ax.set_xticks(list(xs), [f"{_label(p)}\n{r.get('exact', 0)}/{r.get('n', 0)}"
                             for p, r in rows], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("exact-match accuracy")


def _dev_vs_test(ax, summary: Mapping) -> None:
    dev = dict(_split_rows(summary, "dev"))
    test = dict(_split_rows(summary, "test"))
    policies = [p for p in ordered_policies(summary.get("policy_results") or {})
                if p in dev or p in test]
    ax.set_title(f"Dev (n={_n(list(dev.items()))}) vs test (n={_n(list(test.items()))}) accuracy")
    if not policies:
        return _empty(ax)
    xs = range(len(policies))
    for shift, split, rows, color in ((-0.2, "dev", dev, "tab:gray"),
                                      (0.2, "test", test, "tab:blue")):
        ax.bar([x + shift for x in xs], [_acc(rows[p]) if p in rows else 0.0 for p in policies],
               width=0.4, label=split, color=color)
    ax.set_xticks(list(xs), [_label(p) for p in policies], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("exact-match accuracy")
    ax.legend()


def _paired_bars(ax, summary: Mapping, keys: tuple[str, str], labels: tuple[str, str],
                 title: str, ylabel: str, colors: tuple[str, str]) -> None:
    rows = _split_rows(summary, "test")
    ax.set_title(f"{title} on held-out test (n={_n(rows)})")
    if not rows:
        return _empty(ax)
    xs = range(len(rows))
    for shift, key, label, color in ((-0.2, keys[0], labels[0], colors[0]),
                                     (0.2, keys[1], labels[1], colors[1])):
        ax.bar([x + shift for x in xs], [r.get(key) or 0 for _, r in rows], width=0.4,
               label=label, color=color)
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # these are counts
    ax.set_xticks(list(xs), [_label(p) for p, _ in rows], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.legend()


def _budget(ax, summary: Mapping) -> None:
    _paired_bars(ax, summary, ("program_generations", "repair_actions"),
                 ("program generations", "repair actions"), "Tool budget", "count over the split",
                 ("tab:blue", "tab:orange"))


def _recoveries(ax, summary: Mapping) -> None:
    _paired_bars(ax, summary, ("direct_miss_recoveries", "direct_correct_losses"),
                 ("recoveries (direct wrong, program right)", "losses (direct right, program wrong)"),
                 "Program commits vs the direct answer", "cases", ("tab:green", "tab:red"))


def _compute(ax, summary: Mapping) -> None:
    cost = _frontier_cost(summary)
    rows = _split_rows(summary, "test")
    ax.set_title(f"Accuracy vs compute on held-out test (n={_n(rows)})")
    # policies that land on the same point share one marker and one legend entry (no overlapping labels)
    at: dict[tuple, list[str]] = {}
    for policy, r in rows:
        at.setdefault((round(cost_per_case(r, cost), 6), round(_acc(r) or 0.0, 6)), []).append(policy)
    colors = __import__("matplotlib").colormaps["tab10"]
    for k, ((x, y), names) in enumerate(sorted(at.items())):
        oracle = ORACLE in names
        label = ", ".join(n + (" (hindsight)" if n == ORACLE else "") for n in names)
        ax.scatter([x], [y], marker="*" if oracle else "o", s=160 if oracle else 50, color=colors(k % 10),
                   edgecolor="black", zorder=3, label=label)
    for learner, front in (summary.get("frontier") or {}).items():
        if front.get("cost", "generations") != cost:
            continue  # another cost axis; the report's table still lists it
        pts = sorted((p for p in front.get("points", []) if p.get("split", "test") == "test"),
                     key=lambda p: p["cost"])
        if pts:
            ax.plot([p["cost"] for p in pts], [p["accuracy"] for p in pts], marker=".",
                    label=f"{learner} frontier (lambda sweep)")
    if not rows and not summary.get("frontier"):
        return _empty(ax)
    ax.set_xlabel(f"{COST_UNITS.get(cost, cost)} per case")
    ax.set_ylabel("exact-match accuracy")
    ax.set_ylim(0, 1.05)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="lower right")


DRAWERS: dict[str, Callable] = dict(zip(FIGURE_NAMES, (
    _heldout, _dev_vs_test, _budget, _recoveries, _compute,
)))


def _save_atomic(fig, path: Path) -> None:
    import io

    from .outputs import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    atomic_write_bytes(path, buf.getvalue())


def write_figures(summary: Mapping, out_dir: str | os.PathLike) -> list[str]:
    """Draw the five figures into ``out_dir`` (created if needed); return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, draw in DRAWERS.items():
        fig, ax = plt.subplots(figsize=(9, 4.8))
        try:
            draw(ax, summary)
            path = out / name
            _save_atomic(fig, path)
            paths.append(str(path))
        finally:
            plt.close(fig)
    return paths
