"""report.md rendering and the five figures, from hand-built summaries."""
import json
import os
from pathlib import Path

from controller.report.figures import FIGURE_NAMES, cost_per_case, palette, write_figures
from controller.report.markdown import render_report, write_report
from controller.study.stats import paired_tests, summarize_outcomes

POLICIES = ("direct_only", "always_tool_visible", "learned_rule", "oracle_seq")


def _outcomes(policy, split, n, right, source="direct", gens=0):
    return [{"policy": policy, "split": split, "case_id": f"{split}{i}", "family": f"f{i}",
             "actions": [], "source": source, "correct": i < right, "direct_correct": False,
             "program_generations": gens, "repair_actions": 0, "generated_tokens": 10,
             "sandbox_ms": 1.0} for i in range(n)]


def _outcomes_by_policy(split, n):
    return {"direct_only": _outcomes("direct_only", split, n, 0),
            "always_tool_visible": _outcomes("always_tool_visible", split, n, 2, "program", 2),
            "learned_rule": _outcomes("learned_rule", split, n, 2, "program", 1),
            "oracle_seq": _outcomes("oracle_seq", split, n, 3, "program", 1)}


def full_summary():
    by_split = {s: _outcomes_by_policy(s, 12) for s in ("dev", "test")}
    results = {p: {s: summarize_outcomes(by_split[s][p]) for s in by_split} for p in POLICIES}
    counts = {"n": 12, "direct_exact": 0, "program_exact": 2, "oracle_union": 3,
              "unscored": 0}
    failures_split = {"n": 12, "direct": {"correct": 0, "unparsed": 3, "wrong_shape": 4,
                                          "close_miss": 2, "far_miss": 3},
                      "n_rounds": 20, "round_categories": {"syntax": 2, "pass": 5},
                      "overfit_rounds": 1, "overfit_cases": 1, "overfit_families": ["amb_fam"],
                      "fix_rounds": 8, "repeated_repairs": 2, "hidden_only_rounds": 0,
                      "unsolvable_cases": 9, "unsolvable_families": ["f9"],
                      "policies": {"learned_rule": {"n": 12, "wrong": 10, "wrong_direct_commit": 9,
                                                    "wrong_program_commit": 1,
                                                    "wrong_but_solvable": 1}}}
    return {
        # config shaped as the CLI writes it: nested backend and experiment dicts
        "config": {"cases": "cases/data", "backend": {"name": "synth", "model": "synth-pbe"},
                   "experiment": {"seed": 7}, "split_seed": 3},
        "versions": {"python": "3.11", "vllm": None},
        "n_records": 24,
        "splits": {"dev": dict(counts, families=["d1", "d2"]),
                   "test": dict(counts, families=["t1", "t2"])},
        "policy_results": results,
        "learned_rule": {"model": "tree_depth2", "n_train_states": 40,
                         "candidates": {"tree_depth2": {"dev_accuracy": 0.5,
                                                        "dev_program_generations": 12},
                                        "stump": {"dev_accuracy": 0.4,
                                                  "dev_program_generations": 3}},
                         "description": "|--- passes_example <= 0.5\n|   |--- class: WRITE"},
        "paired_tests": {"test": paired_tests(by_split["test"], split="test", seed=0)},
        "dagger": {"lora_seq_policy": [
            {"iter": 0, "beta": 1.0, "n_states": 40, "dev": results["learned_rule"]["dev"],
             "test": results["learned_rule"]["test"]}]},
        "cv": {"k": 2, "folds": [{"test_families": ["t1"], "policy_results": {
            "direct_only": results["direct_only"]["test"]}}],
               "pooled": {"direct_only": results["direct_only"]["test"]}},
        "frontier": {"learned_rule": {"cost": "generations", "points": [
            {"lambda": 0.0, "cost": 1.0, "accuracy": 0.2, "split": "test"},
            {"lambda": 0.0, "cost": 1.5, "accuracy": 0.3, "split": "dev"},
            {"lambda": 0.5, "cost": 0.5, "accuracy": 0.1, "split": "test"}]}},
        "failures": {"close_miss_rule": {"max_cells": 2, "max_fraction": 0.1},
                     "splits": {"test": failures_split}, "total": failures_split},
        "sandbox": {"network": "off"},
        "timing": {"tracegen": 12.5, "trace_stats": {"waves": 3}},
        "seeds": {"learned_rule": {s: {"seeds": [7, 8, 9], "exact": [2, 1, 3], "n": 12, "mean": 2.0, "min": 1,
                                       "max": 3} for s in ("dev", "test")}},
    }


SECTIONS = ["## Summary", "## Splits and trace counts", "## Held-out test result",
            "## Dev vs test", "## Paired tests", "## Seeds", "## Learned rule", "## DAgger",
            "## Cross-validation", "## Budget frontier", "## Failure analysis",
            "## Sandbox and timing", "## Figures", "## What the numbers show and do not show"]


def test_dagger_is_reported_only_where_states_exceed_the_recorded_chain():
    full = full_summary()
    if not full.get("dagger"):
        full["dagger"] = {"learned_rule": [{"iter": 0, "dataset_size": 3}]}
    assert "cannot add a state" in render_report(full) and "## DAgger iterations" not in render_report(full)
    full["config"] = dict(full.get("config") or {}, rollout={"program_samples": 3})
    assert "## DAgger iterations" in render_report(full)


def test_report_renders_every_section_in_order():
    md = render_report(full_summary())
    positions = [md.index(s) for s in SECTIONS]
    assert positions == sorted(positions)
    assert "`synth`" in md and "`synth-pbe`" in md
    # held-out row: always_tool_visible 2/12 with its Wilson interval and precision
    assert "| `always_tool_visible` | 2/12 | 12 | 16.7% [4.7, 44.8] | " in md
    assert "| 24 | 0 | 12 |" in md  # generations, repairs, commits
    assert "Work (" in md and "Completion tokens" in md and "Sandbox (ms)" in md  # units named
    assert "p (Holm)" in md and "family bootstrap" in md
    # seeds: mean [min, max] / n, and no claim about learned_rule beyond what every seed shows
    assert "| `learned_rule` | 2.0 [1, 3] / 12 | 2.0 [1, 3] / 12 | 2, 1, 3 |" in md
    assert "`learned_rule` vs `direct_only`: within noise at the family level" in md
    assert "within noise" in md  # 2/12 vs 0/12 cannot be told apart
    assert "seed: 7" in md and "split seed: 3" in md and "vllm" not in md
    assert "Chosen on dev: `tree_depth2`" in md and "| `stump` | 40.0% | 3 |" in md
    assert "passes_example" in md and "- n_train_states: 40" in md
    # frontier: one row per lambda, dev and test side by side, missing cells n/a
    assert "| 0.0 | 1.500 | 30.0% | 1.000 | 20.0% |" in md
    assert "| 0.5 | n/a | n/a | 0.500 | 10.0% |" in md
    assert "| trace_stats.waves | 3 |" in md
    assert "figures/heldout_accuracy.png" in md and "figures/accuracy_vs_compute.png" in md
    assert "amb_fam" in md
    # limitations computed from the data: n=12 needs 6 one-way discordant cases -> 50.0%
    assert "n=12" in md and "50.0 pp" in md and "not a language model" in md
    assert "9 of 12 test cases have no visible path" in md


def test_report_skips_missing_sections():
    full = full_summary()
    minimal = {"config": {"backend": "hf"}, "policy_results": {
        "direct_only": {"test": full["policy_results"]["direct_only"]["test"]}}}
    md = render_report(minimal)
    for present in ("## Summary", "## Held-out test result", "## Figures",
                    "## What the numbers show and do not show"):
        assert present in md
    for absent in ("## Paired tests", "## Learned rule", "## DAgger", "## Cross-validation",
                   "## Budget frontier", "## Failure analysis", "## Dev vs test",
                   "## Splits and trace counts", "not a language model"):
        assert absent not in md
    assert render_report({}).startswith("# ")


def test_write_report_atomic(tmp_path):
    path = tmp_path / "reports" / "report.md"
    write_report(full_summary(), path)
    assert path.read_text().startswith("# Live tool DAgger report")
    assert os.listdir(path.parent) == ["report.md"]  # no temp file left behind


def test_write_figures(tmp_path):
    paths = write_figures(full_summary(), tmp_path / "figures")
    assert [os.path.basename(p) for p in paths] == list(FIGURE_NAMES)
    for p in paths:
        with open(p, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
        assert os.path.getsize(p) > 1000
    assert sorted(os.listdir(tmp_path / "figures")) == sorted(FIGURE_NAMES)
    # empty summary still writes all five
    assert len(write_figures({}, tmp_path / "empty")) == 5


def test_cost_per_case():
    r = {"n": 3, "unscored": 1, "program_generations": 6, "generated_tokens": 400}
    assert cost_per_case(r, "generations") == 1.5
    assert cost_per_case(r, "tokens") == 0.1  # thousand tokens
    assert cost_per_case({}, "tokens") == 0.0


def test_best_deployable_is_picked_on_dev_and_ties_are_named():
    from controller.report.markdown import best_deployable

    full = full_summary()
    pr = full["policy_results"]
    # dev: learned_rule and always_tool tie at 2/12; learned_rule spent fewer generations -> it wins
    assert best_deployable(full) == ["learned_rule"]
    # make test favour always_tool: the pick must not move (dev decides, never test)
    pr["always_tool_visible"]["test"] = dict(pr["always_tool_visible"]["test"], exact=11, accuracy=11 / 12)
    assert best_deployable(full) == ["learned_rule"]
    # a tie on dev accuracy broken by generations is no finding: the summary shows no best-deployable line
    assert "Best deployable policy, picked on dev" not in render_report(full)
    # a full tie on dev (accuracy and generations): no choice is presented
    pr["learned_rule"]["dev"] = dict(pr["always_tool_visible"]["dev"])
    assert best_deployable(full) == ["always_tool_visible", "learned_rule"]
    assert "best deployable" not in render_report(full).split("## Summary")[1].split("\n## ")[0]


def test_rule_dev_tie_is_reported_not_presented_as_a_choice():
    full = full_summary()
    full["learned_rule"]["candidates"]["stump"] = dict(full["learned_rule"]["candidates"]["tree_depth2"])
    full["learned_rule"]["dev_tie"] = True
    md = render_report(full)
    assert "Every candidate ties on dev" in md and "Chosen on dev" not in md


def test_seed_claims_need_every_seed():
    from controller.report.markdown import seed_claims

    full = full_summary()
    t = full["paired_tests"]["test"]["learned_rule"]["direct_only"]
    t.update(verdict="better", p_holm=0.01)
    # direct_only is 0/12; seeds 2, 1, 3 all above it -> the claim holds across seeds
    assert any("better than `direct_only`" in c and "every one of 3 seed(s)" in c for c in seed_claims(full))
    full["seeds"]["learned_rule"]["test"]["exact"] = [2, 0, 3]
    claims = seed_claims(full)
    assert any("not at every seed" in c and "no claim" in c for c in claims)
    assert not any("better than `direct_only`" in c for c in claims)


def test_every_policy_gets_its_own_colour():
    for n in (3, 10, 11, 14, 20):
        assert len(set(palette(n))) == n


def test_figures_have_no_overlapping_labels_and_no_legend_over_the_data():
    """Drawn from a study-sized summary (17 policies, every routing panel): tick labels of an axis
    never overlap each other, and no legend lies over an axes' data area."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from controller.report.figures import draw_figures

    summary = json.loads((Path(__file__).resolve().parents[3] / "results" / "foofah" / "final_summary.json").read_text())
    assert len(summary["policy_results"]) >= 15

    def overlap(a, b):
        return a.x0 < b.x1 - 0.5 and b.x0 < a.x1 - 0.5 and a.y0 < b.y1 - 0.5 and b.y0 < a.y1 - 0.5

    for name, fig in draw_figures(summary, plt):
        try:
            fig.canvas.draw()
            r = fig.canvas.get_renderer()
            legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
            assert legends or name == "heldout_accuracy.png", name
            for ax in fig.axes:
                for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
                    boxes = [t.get_window_extent(r) for t in labels if t.get_visible() and t.get_text()]
                    assert not any(overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), name
                for leg in legends:
                    assert not overlap(leg.get_window_extent(r), ax.get_window_extent(r)), name
        finally:
            plt.close(fig)


def test_the_answer_puts_each_learner_beside_the_hull_at_its_own_cost():
    """The headline comparison is on the accuracy-cost plane: the hull's mix at the learner's cost,
    with the family interval of the difference and its p (issue: the claim's own comparator)."""
    from controller.report.answer import plane_md

    hull = {"a": "repair_at_most_1", "b": "always_tool_visible", "w": 0.25, "n": 40, "learner_exact": 30,
            "expected_exact": 31.5, "diff": -0.0375, "diff_ci95_family": [-0.08, 0.01], "p_family": 0.4}
    s = {"routing": {"cv_pooled": {"generations": {"learners": {"learned_rule": {"cost": 1.25, "hull": hull}}}}}}
    text = "\n".join(plane_md(s, ["learned_rule"]))
    assert "| `learned_rule` | 1.250 | 30/40 | 31.5 (`repair_at_most_1` + `always_tool_visible`, w = 0.25) |" in text
    assert "-3.8 pp [-8.0, +1.0] | 0.4 |" in text and "cv pooled" in text
    assert plane_md({"routing": {}}, ["learned_rule"]) == []
