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

from controller.env.cost import UNITS
from controller.env.registry import ORACLE, ordered as ordered_policies
from controller.study.stats import wilson_ci

FIGURE_NAMES = (
    "heldout_accuracy.png",
    "dev_vs_test.png",
    "tool_budget.png",
    "recoveries_losses.png",
    "accuracy_vs_compute.png",
)
# Frontier cost kinds and their per-case unit (the cost registry's axis words; the figures read
# ``UNITS`` itself, so a unit registered after import is drawn too).
COST_UNITS = {u.name: u.axis for u in UNITS.values()}


# ----------------------------------------------------------------------------- data helpers


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
    """A cost unit's field per traced case, unscored included (thousands for tokens and work).

    Frontier points carry their ``cost`` in the same unit, so policies and frontiers share
    one x axis.
    """
    return (UNITS.get(cost) or UNITS["generations"]).per_traced_case(res)


def _frontier_cost(summary: Mapping) -> str:
    kinds = [f.get("cost", "generations") for f in (summary.get("frontier") or {}).values()]
    return kinds[0] if kinds else "generations"


# ----------------------------------------------------------------------------- drawing
# Bar figures are horizontal: a policy name is read on its own line, however many policies a study
# has (upright bars put seventeen names under one axis and they ran into each other). Legends sit
# above the axes, never over the bars.


def _empty(ax, text: str = "no results for this split") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)


def _policy_axis(ax, names: list[str]) -> range:
    ys = range(len(names))
    ax.set_yticks(list(ys), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)  # the first policy on top, in the report's order
    ax.grid(axis="x", alpha=0.25)
    return ys


def _legend_above(ax, ncol: int = 2) -> None:
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.01), ncol=ncol, fontsize=8, frameon=False,
              borderaxespad=0.0)


def _heldout(ax, summary: Mapping) -> None:
    rows = _split_rows(summary, "test")
    family = any(r.get("accuracy_ci95_family") for _, r in rows)
    fams = max((r.get("n_families") or 0 for _, r in rows), default=0)
    ax.set_title(f"Held-out test accuracy (n={_n(rows)}" + (f", {fams} families, 95% family-bootstrap intervals)"
                                                            if family else ", 95% Wilson intervals)"), fontsize=10)
    if not rows:
        return _empty(ax)
    ys = _policy_axis(ax, [p for p, _ in rows])
    errs = list(zip(*[_err(r) for _, r in rows]))
    ax.barh(list(ys), [_acc(r) for _, r in rows], xerr=errs, capsize=3, color="tab:blue", height=0.6)
    for y, (_, r) in zip(ys, rows):  # exact/n right of the axis: a bar of length 0 has no room
        ax.annotate(f"{r.get('exact', 0)}/{r.get('n', 0)}", (1.0, y), xytext=(6, 0), textcoords="offset points",
                    xycoords=("axes fraction", "data"), va="center", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("exact-match accuracy")


def _dev_vs_test(ax, summary: Mapping) -> None:
    dev = dict(_split_rows(summary, "dev"))
    test = dict(_split_rows(summary, "test"))
    policies = [p for p in ordered_policies(summary.get("policy_results") or {})
                if p in dev or p in test]
    ax.set_title(f"Dev (n={_n(list(dev.items()))}) vs test (n={_n(list(test.items()))}) accuracy", fontsize=10,
                 pad=22)
    if not policies:
        return _empty(ax)
    ys = _policy_axis(ax, policies)
    for shift, split, rows, color in ((-0.2, "dev", dev, "tab:gray"),
                                      (0.2, "test", test, "tab:blue")):
        ax.barh([y + shift for y in ys], [_acc(rows[p]) if p in rows else 0.0 for p in policies],
                height=0.4, label=split, color=color)
    ax.set_xlim(0, 1)
    ax.set_xlabel("exact-match accuracy")
    _legend_above(ax)


def _paired_bars(ax, summary: Mapping, keys: tuple[str, str], labels: tuple[str, str],
                 title: str, xlabel: str, colors: tuple[str, str]) -> None:
    rows = _split_rows(summary, "test")
    ax.set_title(f"{title} on held-out test (n={_n(rows)})", fontsize=10, pad=22)
    if not rows:
        return _empty(ax)
    ys = _policy_axis(ax, [p for p, _ in rows])
    for shift, key, label, color in ((-0.2, keys[0], labels[0], colors[0]),
                                     (0.2, keys[1], labels[1], colors[1])):
        ax.barh([y + shift for y in ys], [r.get(key) or 0 for _, r in rows], height=0.4,
                label=label, color=color)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # these are counts
    ax.set_xlabel(xlabel)
    _legend_above(ax)


def _budget(ax, summary: Mapping) -> None:
    _paired_bars(ax, summary, ("program_generations", "repair_actions"),
                 ("program generations", "repair actions"), "Tool budget", "count over the split",
                 ("tab:blue", "tab:orange"))


def _recoveries(ax, summary: Mapping) -> None:
    _paired_bars(ax, summary, ("direct_miss_recoveries", "direct_correct_losses"),
                 ("recoveries (direct wrong, program right)", "losses (direct right, program wrong)"),
                 "Program commits vs the direct answer", "cases", ("tab:green", "tab:red"))


def _compute(ax, summary: Mapping) -> None:
    """The single-panel figure of a summary without routing blocks (older summaries)."""
    cost = _frontier_cost(summary)
    rows = _split_rows(summary, "test")
    ax.set_title(f"Accuracy vs compute on held-out test (n={_n(rows)})", fontsize=10)
    # policies that land on the same point share one marker and one legend entry (no overlapping labels)
    at: dict[tuple, list[str]] = {}
    for policy, r in rows:
        at.setdefault((round(cost_per_case(r, cost), 6), round(_acc(r) or 0.0, 6)), []).append(policy)
    colors = palette(len(at))
    for k, ((x, y), names) in enumerate(sorted(at.items())):
        oracle = ORACLE in names
        label = ", ".join(n + (" (hindsight)" if n == ORACLE else "") for n in names)
        ax.scatter([x], [y], marker="*" if oracle else "o", s=160 if oracle else 50, color=colors[k],
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
    ax.set_xlabel(f"{UNITS[cost].axis if cost in UNITS else cost} per case")
    ax.set_ylabel("exact-match accuracy")
    ax.set_ylim(0, 1.05)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)


def _n_policies(summary: Mapping) -> int:
    return len(summary.get("policy_results") or {})


DRAWERS: dict[str, Callable] = dict(zip(FIGURE_NAMES, (
    _heldout, _dev_vs_test, _budget, _recoveries, _compute,
)))

# ----------------------------------------------------------------------------- accuracy vs cost panels

PANEL_SPLITS = (("test", "held-out test"), ("cv_pooled", "pooled cross-validation"))
PANEL_UNITS = {u.name: u.panel for u in UNITS.values()}  # the built-in units' panel titles


def cost_panels(summary: Mapping) -> list[tuple[str, str, Mapping]]:
    """(split, unit, routing block) of every panel that has at least one policy point."""
    r = summary.get("routing") or {}
    return [(split, unit, r[split][unit]) for split, _ in PANEL_SPLITS for unit in UNITS
            if (r.get(split) or {}).get(unit, {}).get("points")]


def _xy_err(pt: Mapping) -> tuple[list, list]:
    """Family-bootstrap error bar lengths (x: cost, y: accuracy) around a point."""
    def err(v, ci):
        return [[max(0.0, v - ci[0])], [max(0.0, ci[1] - v)]] if ci else [[0.0], [0.0]]
    return err(pt["cost"], pt.get("cost_ci95_family")), err(pt["accuracy"], pt.get("accuracy_ci95_family"))


def _panel(ax, split: str, unit: str, block: Mapping, colors: Mapping[str, object], weak: str, strong: str) -> None:
    pts = {p: v for p, v in block["points"].items() if v.get("cost") is not None and v.get("accuracy") is not None}
    hull = block.get("hull") or []
    if len(hull) > 1:
        ax.plot([h["cost"] for h in hull], [h["accuracy"] for h in hull], color="0.55", lw=2.5, alpha=0.6,
                zorder=1, label="fixed-policy hull (best random mix of two fixed policies)")
    if weak in pts and strong in pts:
        ax.plot([pts[weak]["cost"], pts[strong]["cost"]], [pts[weak]["accuracy"], pts[strong]["accuracy"]],
                color="black", ls="--", lw=1, zorder=1, label=f"random mix {weak} / {strong}")
    for name, L in (block.get("learners") or {}).items():
        ca = (L.get("frontier") or {}).get("cost_accuracy") or []
        if len(ca) > 1:
            ax.plot([c for c, _ in ca], [a for _, a in ca], marker=".", ms=5, lw=1, color=colors[name], alpha=0.8,
                    zorder=2, label=f"{name} lambda sweep")
    # policies on the same point: the first a filled marker with the error bars, each further one a
    # larger ring around it, so every policy keeps its own colour and legend entry (no overlapping labels)
    at: dict[tuple, list[str]] = {}
    for name in ordered_policies(pts):
        at.setdefault((round(pts[name]["cost"], 6), round(pts[name]["accuracy"], 6)), []).append(name)
    for names in at.values():
        for k, name in enumerate(names):
            pt, oracle = pts[name], name == ORACLE
            label = "_policy"  # policy entries are built once for the whole figure
            if k == 0:
                xerr, yerr = _xy_err(pt)
                ax.errorbar([pt["cost"]], [pt["accuracy"]], xerr=xerr, yerr=yerr, fmt="*" if oracle else "o",
                            ms=13 if oracle else 7, color=colors[name], mec="black", ecolor=colors[name],
                            elinewidth=1, capsize=2, zorder=4, label=label)
            else:
                ax.plot([pt["cost"]], [pt["accuracy"]], "o", ms=7 + 5 * k, mfc="none", mew=1.8, color=colors[name],
                        zorder=3, label=label)
    n = max(v.get("n", 0) for v in pts.values())
    fams = max(v.get("n_families", 0) for v in pts.values())
    ax.set_title(f"{dict(PANEL_SPLITS)[split]} (n={n}, {fams} families)", fontsize=10)
    ax.set_xlabel(UNITS[unit].panel, fontsize=9)
    ax.set_ylabel("exact-match accuracy (scored cases)", fontsize=9)
    ax.set_ylim(0, 1.02)
    ax.set_xlim(left=min(0.0, ax.get_xlim()[0]))
    ax.grid(alpha=0.25)


def palette(n: int) -> list:
    """``n`` colours, all different up to twenty: tab10, or tab20 for more than ten (a study has
    a dozen policies or so; with tab10 alone the eleventh took the first one's colour)."""
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def draw_cost_panels(summary: Mapping, plt):
    """Accuracy vs cost, one panel per (split, unit); one legend outside the panels, on the right.
    None when the summary has no routing key (older summaries: the single-panel figure)."""
    panels = cost_panels(summary)
    if not panels:
        return None
    splits = [s for s, _ in PANEL_SPLITS if any(p[0] == s for p in panels)]
    units = [u for u in UNITS if any(p[1] == u for p in panels)]
    # a row per cost unit, a column per split, the legend below: about 1,100 px wide at the
    # saved dpi, so the page at the viewer's width shows it near full size
    fig, axes = plt.subplots(len(units), len(splits), figsize=(5.0 * len(splits), 3.4 * len(units) + 1.6),
                             squeeze=False)
    names = ordered_policies({p: 1 for _, _, b in panels for p in b["points"]})
    colors = dict(zip(names, palette(len(names))))
    r = summary["routing"]
    for i, split in enumerate(splits):
        for j, unit in enumerate(units):
            ax = axes[j][i]
            block = (r.get(split) or {}).get(unit)
            if block and block.get("points"):
                _panel(ax, split, unit, block, colors, r.get("weak", "direct_only"),
                       r.get("strong", "always_tool_visible"))
            else:
                ax.remove()  # no empty axes
    from matplotlib.lines import Line2D

    handles: dict[str, object] = {}
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if not lab.startswith("_"):
                handles.setdefault(lab, h)
    drawn = {p for _, _, b in panels for p in b["points"]}
    for p in names:
        if p in drawn:
            handles[p + (" (hindsight)" if p == ORACLE else "")] = Line2D(
                [], [], ls="none", marker="*" if p == ORACLE else "o", ms=11 if p == ORACLE else 7, color=colors[p],
                mec="black")
    handles["rings: policies on the same point"] = Line2D([], [], ls="none", marker="o", ms=12, mfc="none",
                                                           color="0.3")
    fig.suptitle("Accuracy vs tool cost (error bars: 95% family bootstrap)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.legend(list(handles.values()), list(handles), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3,
               fontsize=8, frameon=False)
    return fig


def _save_atomic(fig, path: Path) -> None:
    import io

    from controller.report.outputs import atomic_write_bytes

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
    for name, fig in draw_figures(summary, plt):
        try:
            path = out / name
            _save_atomic(fig, path)
            paths.append(str(path))
        finally:
            plt.close(fig)
    return paths


def draw_figures(summary: Mapping, plt):
    """Yield (file name, matplotlib figure) for each of the five figures; the caller closes them."""
    bar_height = 1.4 + 0.3 * max(_n_policies(summary), 4)  # a row per policy
    for name, draw in DRAWERS.items():
        fig, ax = (draw_cost_panels(summary, plt) if name == "accuracy_vs_compute.png" else None), None
        if fig is None:
            fig, ax = plt.subplots(figsize=(8, 4.8) if name == "accuracy_vs_compute.png" else (8, bar_height))
            draw(ax, summary)
            fig.tight_layout()
        yield name, fig
