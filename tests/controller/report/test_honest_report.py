"""The report names nulls as nulls, says "Registered" only over a registered study, picks one fixed
policy, and says which test decides when an interval and a verdict seem to disagree."""
from controller.report.fmt import which_test_decides
from controller.report.markdown import best_deployable, render_report
from controller.study.null_match import null_matches

from test_report import _outcomes, full_summary


def _with_cv(full, **learners):
    """Pooled CV outcomes: always-tool and direct-only as given, each learner a copy of a null's actions or not."""
    base = {"always_tool_visible": [dict(o, actions=["WRITE", "PROGRAM"]) for o in _outcomes("always_tool_visible", "test", 6, 2)],
            "direct_only": [dict(o, actions=["DIRECT"]) for o in _outcomes("direct_only", "test", 6, 0)]}
    for name, acts in learners.items():
        base[name] = [dict(o, policy=name, actions=acts(i)) for i, o in enumerate(base["always_tool_visible"])]
    return base


def test_a_learner_that_takes_a_nulls_actions_on_every_case_is_named_a_null():
    outs = _with_cv(full_summary(), lora_seq_policy=lambda i: ["WRITE", "PROGRAM"],
                    learned_rule=lambda i: ["DIRECT"] if i == 0 else ["WRITE", "PROGRAM"])
    m = null_matches({"cv_pooled": outs})
    assert m["learners"]["lora_seq_policy"]["equals"] == ["always_tool_visible"]
    assert m["learners"]["learned_rule"] == {"n": 6, "same": {"always_tool_visible": 5, "direct_only": 1},
                                             "equals": []}
    full = full_summary()
    full["null_matches"] = m
    full["cv"]["pooled"].update({p: full["policy_results"]["always_tool_visible"]["test"]
                                 for p in ("always_tool_visible", "learned_rule", "lora_seq_policy")})
    md = render_report(full)
    assert "`lora_seq_policy` learned a null: it takes `always_tool_visible`'s actions on 6/6 cases" in md
    assert "`learned_rule` learned a null" not in md


def test_registered_only_over_a_registered_study():
    full = full_summary()
    full["cv"]["pooled"]["always_tool_visible"] = full["policy_results"]["always_tool_visible"]["test"]
    full["hypotheses"] = [{"name": "h", "primary": True, "statistic": "accuracy_diff", "policies": ["a", "b"],
                           "split": "cv_pooled", "unit": "generations", "verdict": "within noise", "estimate": 0.0}]
    full["study"] = {"name": "default", "registration": "not registered", "pre_registered": False}
    md = render_report(full)
    assert "Registered primary" not in md and "Primary hypotheses (the built-in default study, not registered)" in md
    full["study"] = {"name": "s", "source": "s.toml", "registration": "pre-registered", "pre_registered": True}
    assert "**Registered primary hypotheses:**" in render_report(full)


def test_one_picked_fixed_policy_when_the_run_chose_best_fixed():
    full = full_summary()
    pr = full["policy_results"]
    # dev: direct_only best of all (a fixed policy), but the run's best fixed policy is always-tool
    pr["direct_only"]["dev"] = dict(pr["direct_only"]["dev"], exact=5, accuracy=5 / 12)
    assert best_deployable(full) == ["direct_only"]
    pr["best_fixed"] = {s: dict(pr["always_tool_visible"][s]) for s in ("dev", "test")}
    # the fixed policies are represented by best_fixed alone: direct_only is no longer a candidate
    assert best_deployable(full) == ["learned_rule"]
    assert "`direct_only` (picked on dev)" not in render_report(full)


def test_an_interval_and_a_verdict_that_seem_to_disagree_say_which_test_decides():
    words = which_test_decides([-0.483, -0.05], "within noise", 0.0625, 0.125, 4)
    assert "family-level sign-flip test over 4 families, p = 0.062, Holm-adjusted 0.125, which decides" in words
    assert which_test_decides([-0.4, 0.1], "within noise", 0.3) == ""
    assert which_test_decides([0.1, 0.4], "better", 0.01) == ""
    assert "includes 0" in which_test_decides([-0.1, 0.4], "better", 0.01)
    assert which_test_decides([0.0, 0.0], "undecidable (no right answer anywhere on test)", 1.0) == ""
