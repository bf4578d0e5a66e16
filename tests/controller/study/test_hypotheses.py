"""Study files and pre-registered hypotheses: loading, hostile input, known p-values, the Holm merge."""
import json

import pytest

from controller.study.hypotheses import StudyError, evaluate_study, load_study, parse_study

POLS = ("direct_only", "always_tool_visible", "visible_disagree_rule", "write_once", "learned_rule", "oracle_seq")


def _o(policy, i, right, gens, fam=None):
    return {"policy": policy, "split": "test", "case_id": f"c{i}", "family": fam or f"f{i}", "correct": right,
            "program_generations": gens, "generated_tokens": 100 * gens, "work": 1000 * gens}


def _outcomes(n=7):
    """n families of one case: tools right everywhere, direct never; the rule right everywhere at
    half the cost on odd cases; the disagree rule identical to always-tool."""
    return {"direct_only": [_o("direct_only", i, False, 0) for i in range(n)],
            "always_tool_visible": [_o("always_tool_visible", i, True, 2) for i in range(n)],
            "visible_disagree_rule": [_o("visible_disagree_rule", i, True, 2) for i in range(n)],
            "write_once": [_o("write_once", i, i % 2 == 0, 1) for i in range(n)],
            "learned_rule": [_o("learned_rule", i, True, 1) for i in range(n)],
            "oracle_seq": [_o("oracle_seq", i, True, 1) for i in range(n)]}


def _study(hyps, **kw):
    return parse_study({"name": "t", "cost_unit": "generations", "hypotheses": hyps, **kw}, "t.toml", POLS)


def test_toml_and_json_files_load_and_the_committed_study_is_valid(tmp_path):
    from controller.study.experiment import POLICY_NAMES

    st = load_study("studies/foofah.toml", POLICY_NAMES)
    assert st.cost_unit == "generations" and any(h.primary for h in st.hypotheses)
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"hypotheses": [{"name": "a", "primary": True, "kind": "accuracy_diff",
                                             "policies": ["learned_rule", "direct_only"], "split": "test"}]}))
    assert load_study(str(p)).hypotheses[0].split == "test"


@pytest.mark.parametrize("raw, words", [
    ({"hypotheses": []}, "non-empty list"),
    ({"hypotheses": [{"name": "a", "kind": "accuracy_diff", "policies": ["learned_rule", "direct_only"]}]},
     "no hypothesis is marked primary"),
    ({"hypotheses": [{"name": "a", "primary": True, "kind": "magic", "policies": ["learned_rule", "direct_only"]}]},
     "kind 'magic'"),
    ({"hypotheses": [{"name": "a", "primary": True, "kind": "accuracy_diff", "policies": ["learned_rule"]}]},
     "takes 2 policy names"),
    ({"hypotheses": [{"name": "a", "primary": True, "kind": "accuracy_diff", "policies": ["nope", "direct_only"]}]},
     "unknown policy 'nope'"),
    ({"hypotheses": [{"name": "a", "primary": True, "kind": "accuracy_diff", "split": "train",
                      "policies": ["learned_rule", "direct_only"]}]}, "split 'train'"),
    ({"cost_unit": "dollars", "hypotheses": [{}]}, "cost_unit 'dollars'"),
    ({"alpha": 2, "hypotheses": [{}]}, "alpha"),
])
def test_bad_study_is_one_line_naming_the_file(raw, words):
    with pytest.raises(StudyError) as e:
        parse_study(raw, "bad.toml", POLS)
    assert str(e.value).startswith("bad.toml: ") and words in str(e.value) and "\n" not in str(e.value)


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(StudyError, match="cannot read"):
        load_study(str(tmp_path / "missing.toml"))
    bad = tmp_path / "x.toml"
    bad.write_text("name = [unclosed")
    with pytest.raises(StudyError, match="not valid TOML"):
        load_study(str(bad))


def test_known_p_values_verdicts_and_primaries_first():
    st = _study([
        {"name": "tools", "kind": "accuracy_diff", "policies": ["always_tool_visible", "direct_only"], "split": "test"},
        # margin 0.45: with 7 cases and no loss the exact bound is -(1 - 0.025^(1/7)) = -0.41, so a
        # margin of 0 ("no loss at all") can never be shown; 0.45 can
        {"name": "cheaper", "primary": True, "kind": "cheaper_no_loss", "margin": 0.45,
         "policies": ["learned_rule", "always_tool_visible"], "split": "test"},
    ])
    rows = evaluate_study(st, {"test": _outcomes()})
    assert [r["name"] for r in rows] == ["cheaper", "tools"]  # primaries first
    cheaper, tools = rows
    # 7 families each saving 1 generation: exact sign-flip p = 2 / 2^7; one primary, so Holm leaves it
    assert cheaper["p_family"] == pytest.approx(2 / 128) and cheaper["p_holm"] == pytest.approx(2 / 128)
    assert cheaper["estimate"] == pytest.approx(1.0) and cheaper["accuracy_diff"] == 0
    assert cheaper["verdict"] == "supported"
    assert tools["verdict"] == "better" and tools["estimate"] == pytest.approx(1.0)


def test_cheaper_but_less_accurate_is_not_supported():
    outs = _outcomes()
    outs["learned_rule"] = [_o("learned_rule", i, i != 0, 1) for i in range(7)]  # loses one case of 7
    # margin 0.45: at n = 7 a no-loss claim can pass (see above), so the one loss decides
    st = _study([{"name": "c", "primary": True, "kind": "cheaper_no_loss", "margin": 0.45,
                  "policies": ["learned_rule", "always_tool_visible"], "split": "test"}])
    (row,) = evaluate_study(st, {"test": outs})
    assert row["p_holm"] < 0.05 and row["verdict"].startswith("not supported (an accuracy loss")
    assert "undecidable" not in row


def test_a_no_loss_claim_that_cannot_pass_at_its_n_is_undecidable():
    """At n = 7 and margin 0.02 the exact bound is -0.41 even with no loss, and the learner can win no
    case (always-tool is right everywhere): "undecidable" with the reason, not "not supported"."""
    st = _study([{"name": "c", "primary": True, "kind": "cheaper_no_loss", "margin": 0.02,
                  "policies": ["learned_rule", "always_tool_visible"], "split": "test"}])
    (row,) = evaluate_study(st, {"test": _outcomes()})
    assert row["verdict"].startswith("undecidable (cannot pass at n = 7: even with zero losses")
    assert "-0.410" in row["undecidable"] and row["p_family"] is not None


def test_nothing_right_anywhere_is_undecidable_but_a_cost_claim_is_not():
    outs = {p: [dict(o, correct=False) for o in v] for p, v in _outcomes().items()}
    st = _study([{"name": "acc", "primary": True, "kind": "accuracy_diff", "split": "test",
                  "policies": ["always_tool_visible", "direct_only"]},
                 {"name": "cost", "primary": True, "kind": "cost_saving", "split": "test",
                  "policies": ["learned_rule", "always_tool_visible"]}])
    rows = {r["name"]: r for r in evaluate_study(st, {"test": outs})}
    assert rows["acc"]["verdict"] == "undecidable (no right answer anywhere on test: the hindsight oracle gets 0 of 7)"
    assert rows["cost"]["verdict"] == "cheaper"


def test_too_few_families_is_undecidable():
    outs = {p: v[:4] for p, v in _outcomes().items()}  # 4 families: the sign-flip test stops at p = 0.125
    st = _study([{"name": "acc", "primary": True, "kind": "accuracy_diff", "split": "test",
                  "policies": ["always_tool_visible", "direct_only"]}])
    (row,) = evaluate_study(st, {"test": outs})
    assert row["verdict"].startswith("undecidable (4 families: the family-level sign-flip test cannot go below p = 0.12")


def test_registration_warns_before_the_traces_when_a_bound_cannot_pass():
    from controller.study.decidable import registration_warnings, wins_needed

    st = load_study("studies/smollm2_coder.toml")
    lines = registration_warnings(st, 45, 45)
    assert len(lines) == 3 and all("cannot pass at n = 45 without a win" in w for w in lines)
    assert "-0.079" in lines[0] and f"at least {wins_needed(45, 0.02, 0.05)} wins" in lines[0]
    assert registration_warnings(st, 225, 45) == []  # at 225 cases zero losses pass a 2 pp margin


def test_holm_merges_identical_comparisons_and_leaves_out_ties_and_the_oracle():
    st = _study([
        {"name": "h1", "primary": True, "kind": "accuracy_diff", "policies": ["always_tool_visible", "direct_only"],
         "split": "test"},
        # visible_disagree_rule == always_tool_visible on every case: the same test as h1
        {"name": "h2", "primary": True, "kind": "accuracy_diff", "policies": ["visible_disagree_rule", "direct_only"],
         "split": "test"},
        {"name": "h3", "primary": True, "kind": "accuracy_diff", "policies": ["write_once", "direct_only"],
         "split": "test"},
        {"name": "tie", "primary": True, "kind": "accuracy_diff",
         "policies": ["visible_disagree_rule", "always_tool_visible"], "split": "test"},
        {"name": "ceiling", "primary": True, "kind": "accuracy_diff", "policies": ["oracle_seq", "direct_only"],
         "split": "test"},
    ])
    rows = {r["name"]: r for r in evaluate_study(st, {"test": _outcomes()})}
    p1, p3 = rows["h1"]["p_family"], rows["h3"]["p_family"]
    assert p1 == pytest.approx(2 / 128) and p3 == pytest.approx(2 / 16)  # h3: 4 families (even cases) differ
    # two distinct tests (h1 = h2, h3): Holm multiplies the smaller p by 2 (not by 5)
    assert rows["h1"]["holm_family_size"] == 2
    assert rows["h1"]["p_holm"] == pytest.approx(2 * 2 / 128) == rows["h2"]["p_holm"]
    assert rows["h1"]["merged_with"] == ["h2"] and rows["h2"]["merged_with"] == ["h1"]
    assert rows["h3"]["p_holm"] == pytest.approx(2 / 16)
    assert "identical outcome vectors" in rows["tie"]["excluded"] and rows["tie"]["p_holm"] == 1.0
    assert "oracle" in rows["ceiling"]["excluded"] and rows["ceiling"]["p_holm"] == rows["ceiling"]["p_family"]


def test_beats_random_mix_named_pair_and_hull_pair():
    st = _study([
        {"name": "pair", "primary": True, "kind": "beats_random_mix",
         "policies": ["learned_rule", "always_tool_visible", "direct_only"], "split": "test"},
        {"name": "hull", "primary": False, "kind": "beats_random_mix", "policies": ["learned_rule"], "split": "test"},
        {"name": "cv", "primary": False, "kind": "accuracy_diff", "policies": ["learned_rule", "direct_only"],
         "split": "cv_pooled"},
    ])
    rows = {r["name"]: r for r in evaluate_study(st, {"test": _outcomes()},
                                                 fixed=("direct_only", "always_tool_visible", "write_once"))}
    # the rule costs 1: mixing direct (0) and tools (2) at w = 0.5 expects 3.5 of 7 right; the rule gets 7
    pair = rows["pair"]
    assert pair["w"] == pytest.approx(0.5) and pair["mix_expected_exact"] == pytest.approx(3.5)
    assert pair["p_family"] == pytest.approx(2 / 128) and pair["verdict"] == "better"
    # the hull at cost 1 is write_once itself (the end of the direct/write_once segment): 4 of 7 expected
    assert rows["hull"]["mix"] == ["direct_only", "write_once"] and rows["hull"]["w"] == pytest.approx(1)
    assert rows["hull"]["mix_expected_exact"] == pytest.approx(4.0)
    assert rows["cv"]["verdict"] == "not run" and "cv-folds" in rows["cv"]["excluded"]


def test_hull_past_its_last_vertex_compares_with_the_cheaper_policy():
    """A learner costing more than every fixed policy is compared with the hull's most accurate
    vertex itself (w = 1 on it), not left out: spending more for the same answers is a result."""
    outs = _outcomes()
    outs["learned_rule"] = [_o("learned_rule", i, True, 3) for i in range(7)]  # always-tool's answers, dearer
    st = _study([{"name": "hull", "primary": True, "kind": "beats_random_mix", "policies": ["learned_rule"],
                  "split": "test"}])
    row = evaluate_study(st, {"test": outs}, fixed=("direct_only", "always_tool_visible", "write_once"))[0]
    assert row["mix"] == ["always_tool_visible", "always_tool_visible"] and row["w"] == pytest.approx(1)
    assert row["mix_expected_exact"] == pytest.approx(7.0) and row["learner_exact"] == 7
    assert row["verdict"] != "better" and "excluded" not in row or "cost" not in (row.get("excluded") or "")


def test_exact_noninferiority_bound_known_answer():
    from controller.study.stats import clopper_pearson, noninferiority_lower_bound

    # 0 wins, 1 loss of 225: -CP upper(1, 225, 0.025) = -(beta.ppf(0.975, 2, 224)) ~ -2.45 pp
    assert noninferiority_lower_bound(0, 1, 225, 0.05) == pytest.approx(-0.02451, abs=2e-4)
    assert noninferiority_lower_bound(0, 0, 10) == pytest.approx(-clopper_pearson(0, 10, 0.025)[1])
    assert clopper_pearson(0, 10, 0.025)[1] == pytest.approx(1 - 0.025 ** (1 / 10))  # the rule of three, exactly
    assert noninferiority_lower_bound(0, 0, 0) is None


def test_one_lost_case_in_225_is_not_non_inferior_at_a_2pp_margin():
    """The bootstrap's lower bound (~ -1.3 pp) would call this supported; the exact bound (-2.45 pp) does not."""
    n = 225
    outs = {"always_tool_visible": [_o("always_tool_visible", i, True, 2, fam=f"f{i % 45}") for i in range(n)],
            "learned_rule": [_o("learned_rule", i, i != 0, 1, fam=f"f{i % 45}") for i in range(n)]}
    st = parse_study({"hypotheses": [{"name": "c", "primary": True, "kind": "cheaper_no_loss", "margin": 0.02,
                                      "policies": ["learned_rule", "always_tool_visible"], "split": "test"}]},
                     "t.toml")
    (row,) = evaluate_study(st, {"test": outs})
    ni = row["noninferiority"]
    assert ni["wins"] == 0 and ni["losses"] == 1 and ni["n"] == n and "Clopper-Pearson" in ni["method"]
    assert ni["lower_bound"] == pytest.approx(-0.0245, abs=3e-4)
    assert row["accuracy_interval"][0] > -0.02  # the bootstrap alone would have passed it
    assert row["p_holm"] < 0.05 and row["verdict"].startswith("not supported (an accuracy loss")


def test_unknown_keys_are_errors_naming_the_key_and_the_file(tmp_path):
    base = {"name": "a", "primary": True, "kind": "accuracy_diff", "policies": ["learned_rule", "direct_only"]}
    for raw, key in [({"hypotheses": [base], "alpah": 0.05}, "'alpah'"),
                     ({"hypotheses": [dict(base, margni=0.02)]}, "'margni'"),
                     ({"hypotheses": [base], "split_seeds": {"min_suported": 4}}, "'min_suported'")]:
        p = tmp_path / "typo.json"
        p.write_text(json.dumps(raw))
        with pytest.raises(StudyError) as e:
            load_study(str(p))
        assert str(e.value).startswith(f"{p}: ") and "unknown key " + key in str(e.value)
    with pytest.raises(StudyError, match="min_supported must be an integer"):
        parse_study({"hypotheses": [base], "split_seeds": {"min_supported": 0}}, "x.toml", POLS)
    assert parse_study({"hypotheses": [base], "split_seeds": {"min_supported": 4}}, "x.toml", POLS).min_supported == 4
    assert parse_study({"hypotheses": [base]}, "x.toml", POLS).min_supported is None  # a file without the table
    assert load_study("studies/foofah.toml").min_supported == 4  # the committed registration states its rule


def _seed_records(split_seed, rule_right):
    """7 one-case families; always-tool right at 2 generations, the rule at 1 generation, right where told."""
    recs = []
    for i in range(7):
        recs.append({"split_seed": split_seed, "policy": "always_tool_visible", "case_id": f"c{i}", "family": f"f{i}",
                     "correct": True, "program_generations": 2, "generated_tokens": 200, "work": 2000})
        recs.append({"split_seed": split_seed, "policy": "learned_rule", "case_id": f"c{i}", "family": f"f{i}",
                     "correct": rule_right(i), "program_generations": 1, "generated_tokens": 100, "work": 1000})
    return {"split_seed": split_seed, "folds": [], "records": recs}


def test_per_split_seed_verdicts_and_the_rule():
    from controller.study.hypotheses import attach_split_seeds, combine_verdicts

    hyp = {"name": "acc", "primary": True, "kind": "accuracy_diff", "policies": ["learned_rule", "always_tool_visible"]}
    lora = {"name": "lora", "primary": False, "kind": "accuracy_diff",
            "policies": ["lora_seq_policy", "always_tool_visible"]}
    # the rule loses every case at split seeds 0-2 (p = 2/128: worse), nothing at 3-4 (a tie: within noise)
    ssr = [_seed_records(s, (lambda i: False) if s < 3 else (lambda i: True)) for s in range(5)]
    by_policy = {}
    for r in ssr[0]["records"]:
        by_policy.setdefault(r["policy"], []).append(r)
    for rule, verdict, at in [({}, "within noise (better at 0, worse at 3 of 5 split seeds; the rule needs 5)", "0 of 5"),
                              ({"split_seeds": {"min_supported": 3}}, "worse", "0 of 5")]:
        st = parse_study({"hypotheses": [hyp, lora], **rule}, "t.toml", POLS + ("lora_seq_policy",))
        rows = evaluate_study(st, {"cv_pooled": by_policy})
        attach_split_seeds(rows, st, {"cv_pooled": by_policy}, ssr, 0)
        row = {r["name"]: r for r in rows}
        assert [e["verdict"] for e in row["acc"]["per_split_seed"]] == ["worse"] * 3 + ["within noise"] * 2
        assert [e["split_seed"] for e in row["acc"]["per_split_seed"]] == [0, 1, 2, 3, 4]
        assert row["acc"]["per_split_seed"][0]["p_family"] == pytest.approx(2 / 128)
        assert row["acc"]["per_split_seed"][0]["estimate"] == pytest.approx(-1.0)
        assert row["acc"]["verdict"] == verdict and row["acc"]["supported_at"] == at
        assert row["acc"]["verdict_first_split_seed"] == "worse"
        assert row["lora"]["verdict"] == "not run"
        assert all("lora_seq_policy was not run at split seed" in e["skipped"] for e in row["lora"]["per_split_seed"])
    assert combine_verdicts("cheaper_no_loss", ["supported"] * 4 + ["not supported (x)"], 4) == ("supported", 4)
    assert combine_verdicts("cheaper_no_loss", ["supported"] * 3 + ["not supported (x)"] * 2, 4)[0].startswith(
        "not supported (supported at 3 of 5")


def test_split_seed_rule_table_in_a_toml_file(tmp_path):
    from controller.study.hypotheses import split_seed_rule

    p = tmp_path / "s.toml"
    p.write_text('[split_seeds]\nmin_supported = 4\n\n[[hypotheses]]\nname = "a"\nprimary = true\n'
                 'kind = "accuracy_diff"\npolicies = ["learned_rule", "direct_only"]\n')
    st = load_study(str(p))
    assert st.min_supported == 4
    rule = split_seed_rule(st, 5)
    assert rule["min_supported"] == 4 and rule["of"] == 5 and "min_supported = 4" in rule["rule"]
    assert "cannot be met" in split_seed_rule(st, 3)["rule"]
    assert "min_supported = 4 in studies/foofah.toml" in split_seed_rule(load_study("studies/foofah.toml"), 5)["rule"]
    p.write_text('[[hypotheses]]\nname = "a"\nprimary = true\nkind = "accuracy_diff"\n'
                 'policies = ["learned_rule", "direct_only"]\n')
    assert "states no rule" in split_seed_rule(load_study(str(p)), 5)["rule"]


def test_the_run_prints_the_warning_before_it_traces():
    """``pipeline.warn_undecidable`` is called before the backend opens: it counts scored cases only."""
    from types import SimpleNamespace

    from controller.pipeline import warn_undecidable
    from controller.study.experiment import ExperimentConfig

    cases = [SimpleNamespace(scored=True, family=f"f{i}") for i in range(45)]
    cases.append(SimpleNamespace(scored=False, family="unscored"))
    said = []
    lines = warn_undecidable(ExperimentConfig(study="studies/smollm2_coder.toml"), cases, said.append)
    assert said == lines and len(lines) == 3
    assert lines[0].startswith("warning: `experiment.study` studies/smollm2_coder.toml: hypothesis "
                               "'rule_cheaper_than_best_fixed' (cheaper_no_loss, cv_pooled) cannot pass at n = 45")
    assert warn_undecidable(ExperimentConfig(), cases, said.append) == []
