"""The right nulls (issue 16 item 5) and committing a chosen sample (item 6), on hand-built traces
with known answers: PROGRAM:j and the oracle over it, the weighted-majority null, the shuffled
controls permuting (label, weight) pairs, BC on every reachable state, DAgger's learner/oracle
split of its new states, and the summary entries of an experiment run."""
import pytest

from controller.learn.dagger import learner_reached, path_to, run_dagger
from controller.study.experiment import ExperimentConfig, run_experiment
from controller.learn.lora import PolicyExample, shuffle_labels
from controller.learn.nulls import commit_any_headroom
from controller.env.oracle import action_values, oracle_label
from controller.env.policies import Oracle
from controller.env.registry import fixed_policies
from controller.learn.rule import canonical, fit_majority, fit_rule
from controller.env.simulate import InvalidAction, simulate
from controller.env.state import visible_state
from controller.learn.training import TrainingSet, all_state_pairs, full_state_pairs, labelled, reachable_positions
from tracefactory import ANSWER, WRONG, make_record, make_tree_record
from tracefactory import ScriptedPolicy

ONE_COL_WRONG = [["5"], ["6"], ["7"]]


def _sample1_right(cid="s/s_1", family="s", split="train"):
    """Samples 0 and 1 both pass; sample 0 (the commit rule's pick at the 1-1 tie) is wrong and has
    the example's column count wrong, sample 1 is right. The direct answer is wrong."""
    return make_tree_record(cid, family, split, max_repairs=0, chains=[[(True, WRONG)], [(True, ANSWER)]])



# ------------------------------------------------------------------ item 6: PROGRAM:j


def test_program_j_is_offered_only_for_a_different_passing_output():
    rec = _sample1_right()
    assert visible_state(rec, (1,)).valid_actions == ("DIRECT", "PROGRAM", "RESAMPLE")
    assert visible_state(rec, (1, 1)).valid_actions == ("DIRECT", "PROGRAM", "PROGRAM:1")
    same = make_tree_record(max_repairs=0, chains=[[(True, ANSWER)], [(True, ANSWER)]])
    assert "PROGRAM:1" not in visible_state(same, (1, 1)).valid_actions  # the same commit as PROGRAM
    failed_run = make_tree_record(max_repairs=0, chains=[[(True, ANSWER)], [(True, None)]])
    assert visible_state(failed_run, (1, 1)).valid_actions == ("DIRECT", "PROGRAM")  # no output to commit
    failing = make_tree_record(max_repairs=0, chains=[[(True, ANSWER)], [(False, WRONG)]])
    assert visible_state(failing, (1, 1)).valid_actions == ("DIRECT", "PROGRAM")  # fails the public example
    # three samples: the commit is the 2-1 majority; the alternative names the lone sample
    three = make_tree_record(max_repairs=0, chains=[[(True, WRONG)], [(True, ANSWER)], [(True, ANSWER)]])
    assert visible_state(three, (1, 1, 1)).valid_actions == ("DIRECT", "PROGRAM", "PROGRAM:0")
    s = visible_state(three, (1, 1, 1))
    assert s.features["alternatives"] == 1 and s.features["alt_support"] == 1
    assert s.features["alt_cols_match_example"] == 0 and s.features["commit_cols_match_example"] == 1


def test_k1_offers_no_program_j():
    rec = make_record(rounds=[(False, None), (True, ANSWER)])
    for pos in reachable_positions(rec):
        assert not any(a.startswith("PROGRAM:") for a in visible_state(rec, pos).valid_actions)


def test_oracle_finds_the_right_sample_only_with_program_j():
    rec = _sample1_right()
    vals = action_values(rec, (1, 1))
    assert vals["PROGRAM"][0] == 0.0 and vals["PROGRAM:1"][0] == 1.0
    assert oracle_label(rec, (1, 1)) == "PROGRAM:1"
    o = simulate(Oracle([rec]), [rec])[0]
    assert o["actions"] == ["WRITE", "RESAMPLE", "PROGRAM:1"] and o["correct"] is True
    assert o["committed_sample"] == 1 and o["source"] == "program"
    # the majority-commit action space cannot get it right
    assert simulate(Oracle([rec], commit_any=False), [rec])[0]["correct"] is False
    assert "PROGRAM:1" not in action_values(rec, (1, 1), commit_any=False)
    # a fixed sequence through simulate: PROGRAM commits sample 0 (wrong), PROGRAM:1 sample 1 (right)
    assert simulate(ScriptedPolicy(["WRITE", "RESAMPLE", "PROGRAM"]), [rec])[0]["correct"] is False
    assert simulate(ScriptedPolicy(["WRITE", "RESAMPLE", "PROGRAM:1"]), [rec])[0]["correct"] is True
    with pytest.raises(InvalidAction):  # sample 1 not revealed yet
        simulate(ScriptedPolicy(["WRITE", "PROGRAM:1"]), [rec])


def test_commit_any_headroom_counts_the_gained_cases():
    recs = [_sample1_right("s/s_1", split="test"), _sample1_right("s/s_2", split="dev"),
            make_tree_record("t/t_1", "t", "test", max_repairs=0, chains=[[(True, ANSWER)], [(True, WRONG)]])]
    h = commit_any_headroom(recs)
    assert h["k"] == 2
    assert h["splits"]["test"] == {"n": 2, "oracle_majority_commit": 1, "oracle_commit_any": 2, "gained": 1,
                                   "lost": 0, "gained_cases": ["s/s_1"], "commits_of_a_chosen_sample": 1,
                                   "program_generations_majority_commit": 1,  # DIRECT at once: nothing wins
                                   "program_generations_commit_any": 3}
    assert h["splits"]["pooled"]["gained"] == 2 and h["splits"]["dev"]["gained"] == 1


def test_the_rule_learns_to_commit_the_other_sample():
    """Half the cases: sample 0 passes wrongly (two columns where the example has one) and sample 1
    is right; the other half: sample 0 is right. The runner-up's column check tells them apart."""
    train = []
    for i in range(6):
        train.append(_sample1_right(f"s/s_{i}"))
        train.append(make_tree_record(f"r/r_{i}", "r", max_repairs=0, chains=[[(True, ANSWER)], [(True, WRONG)]]))
    data = labelled(all_state_pairs(train))
    assert "PROGRAM:1" in data.labels
    rule = fit_rule(data, "tree_depth2")
    outs = simulate(rule, train)
    assert all(o["correct"] for o in outs)
    assert {tuple(o["actions"]) for o in outs} == {("WRITE", "RESAMPLE", "PROGRAM:1"), ("WRITE", "PROGRAM")}
    # the rule's decision points name alternatives by rank, not by sample index
    assert canonical(("DIRECT", "PROGRAM", "PROGRAM:0")) == ("DIRECT", "PROGRAM", "PROGRAM:alt1")
    assert ("DIRECT", "PROGRAM", "PROGRAM:alt1") in rule.models


# ------------------------------------------------------------------ item 5: nulls


def _states(rec, positions):
    return [visible_state(rec, p) for p in positions]


def test_majority_action_is_the_weighted_majority_per_decision_point():
    rec = make_record(rounds=[(False, None), (True, ANSWER)])
    start, fail, ok = _states(rec, [0, 1, 2])
    # at the start three light WRITE labels lose to one heavy DIRECT: weighted, not counted
    data = TrainingSet([start] * 4 + [fail] * 2 + [ok],
                       ["WRITE", "WRITE", "WRITE", "DIRECT", "FIX", "DIRECT", "PROGRAM"],
                       [0.05, 0.05, 0.05, 1.0, 0.3, 0.2, 1.0])
    pol = fit_majority(data)
    assert pol.name == "majority_action"
    assert pol.models == {("DIRECT", "WRITE"): "DIRECT", ("DIRECT", "FIX"): "FIX", ("DIRECT", "PROGRAM"): "PROGRAM"}
    assert pol.act([start, fail, ok]) == ["DIRECT", "FIX", "PROGRAM"]
    # it reads no feature: two different states at one decision point get the same action
    other = visible_state(make_record("x", direct=ANSWER, rounds=[(True, WRONG)]), 0)
    assert other.features != start.features and pol.act([other]) == ["DIRECT"]


def test_shuffled_rule_data_permutes_labels_and_weights_together():
    rec = make_record(rounds=[(False, None), (True, ANSWER)])
    start = visible_state(rec, 0)
    labels = ["WRITE", "DIRECT", "WRITE", "DIRECT", "WRITE"]
    weights = [0.1, 0.2, 0.3, 0.4, 0.5]
    data = TrainingSet([start] * 5, labels, weights)
    sh = data.shuffled(seed=3)
    pairs = list(zip(labels, weights))
    assert sorted(zip(sh.labels, sh.weights)) == sorted(pairs)  # every (label, weight) pair moves as one
    assert list(zip(sh.labels, sh.weights)) != pairs  # and they did move
    assert sh.states == data.states and data.shuffled(seed=3).labels == sh.labels


def test_lora_shuffle_moves_weights_with_labels():
    data = [PolicyExample("a", ("DIRECT", "WRITE"), "WRITE", 0.05), PolicyExample("b", ("DIRECT", "WRITE"), "DIRECT", 1.0),
            PolicyExample("c", ("DIRECT", "WRITE"), "WRITE", 0.05), PolicyExample("d", ("DIRECT", "WRITE"), "WRITE", 0.05)]
    out = shuffle_labels(data * 5, seed=1)
    assert sorted((e.label, e.weight) for e in out) == sorted((e.label, e.weight) for e in data * 5)
    heavy = [e for e in out if e.weight == 1.0]
    assert heavy and all(e.label == "DIRECT" for e in heavy)  # the heavy weight stays with its DIRECT label


def test_bc_all_covers_every_reachable_state():
    rec = make_tree_record(max_repairs=1, chains=[[(False, None), (True, WRONG)], [(True, ANSWER)], [(False, None)]])
    pos = reachable_positions(rec)
    # (), (1,), (2,), then from each of (1,) and (2,): RESAMPLE to sample 1, then sample 2 (and its FIX: none held)
    assert set(pos) == {(), (1,), (2,), (1, 1), (2, 1), (1, 1, 1), (2, 1, 1)}
    assert len(pos) == len(set(pos))
    assert {s.key[1] for _, s in full_state_pairs([rec])} == {(), (1,), (2,)}
    assert {s.key[1] for _, s in all_state_pairs([rec])} == set(pos)
    # with K = 1 every reachable state is the recorded chain
    chain = make_record(rounds=[(False, None), (False, None), (True, ANSWER)])
    assert [s.key for _, s in all_state_pairs([chain])] == [s.key for _, s in full_state_pairs([chain])]


def test_dagger_path_and_learner_split_known_answers():
    assert path_to((2, 1)) == [(), (1,), (2,)]
    assert path_to((1,)) == [()] and path_to(()) == []
    keys = {("c", ()), ("c", (1,)), ("c", (1, 1)), ("c", (1, 1, 1)), ("d", (1, 1))}
    assert learner_reached(keys, {("c", (1,))}) == {("c", (1, 1)), ("c", (1, 1, 1))}


class _ResampleAll:
    """A learner that always draws every sample, then commits."""

    name = "resample_all"

    def act(self, states):
        return [next(a for a in ("WRITE", "RESAMPLE", "PROGRAM", "DIRECT") if a in s.valid_actions) for s in states]


def test_dagger_new_states_split_on_a_hand_built_tree():
    # every sample passes and is right: the oracle writes once and commits (states () and (1,), the
    # behaviour-cloning chain); the learner resamples twice, so each case adds (1, 1) and (1, 1, 1)
    recs = [make_tree_record(f"e/e_{i}", "e", max_repairs=0, chains=[[(True, ANSWER)]] * 3) for i in range(3)]
    _, hist = run_dagger(lambda d, i: _ResampleAll(), recs, iters=1)
    h0, h1 = hist
    assert (h0["states_visited"], h0["new_states"], h0["new_states_learner"], h0["new_states_oracle"]) == (6, 0, 0, 0)
    assert h1["beta"] == 0.0
    assert (h1["states_visited"], h1["new_states"], h1["new_states_learner"], h1["new_states_oracle"]) == (12, 6, 6, 0)
    assert h1["states_visited_learner"] == 9  # (1,), (1, 1), (1, 1, 1) per case: the start has no path
    assert h1["added_states"] == 6 and h1["dataset_size"] == 12


def test_hidden_answers_never_reach_the_commit_choice():
    """PROGRAM:j's validity and the alternative features are visible: flipping the hidden answer
    changes no state, and the nulls act the same on the flipped records."""
    rec = make_tree_record(chains=[[(True, WRONG)], [(True, ANSWER)], [(True, ONE_COL_WRONG)]])
    flipped = make_tree_record(chains=[[(True, WRONG)], [(True, ANSWER)], [(True, ONE_COL_WRONG)]], answer=WRONG)
    for pos in reachable_positions(rec):
        assert visible_state(rec, pos) == visible_state(flipped, pos)
    train = [_sample1_right(f"s/s_{i}") for i in range(3)]
    data = labelled(all_state_pairs(train))
    for pol in (fit_majority(data), fit_rule(data, "tree_depth2"), fit_rule(data.shuffled(0), "tree_depth2")):
        assert simulate(pol, [rec])[0]["actions"] == simulate(pol, [flipped])[0]["actions"]


def test_experiment_reports_the_nulls_and_the_commit_headroom():
    recs = []
    for split, n in (("train", 4), ("dev", 2), ("test", 2)):
        for i in range(n):
            recs.append(_sample1_right(f"s{split}/s_{i}", f"s{split}{i % 2}", split))
            recs.append(make_tree_record(f"r{split}/r_{i}", f"r{split}{i % 2}", split, max_repairs=0,
                                         chains=[[(True, ANSWER)], [(True, WRONG)]]))
    cfg = ExperimentConfig(dagger_iters=1, frontier_lambdas=(0.0,), progress=False, bootstrap_resamples=50)
    summary, outcomes = run_experiment(recs, cfg, log=lambda *a: None)
    pr = summary["policy_results"]
    for name in ("majority_action", "learned_rule_shuffled", "learned_rule_bc_oracle", "learned_rule_bc_all"):
        assert set(pr[name]) == {"train", "dev", "test"} and name in outcomes
        assert {o["case_id"] for o in outcomes[name]} == {r["case_id"] for r in recs}
    assert pr["oracle_seq"]["test"]["exact"] == 4 and pr["learned_rule_bc_all"]["test"]["exact"] == 4
    ca = summary["commit_any_sample"]["splits"]
    assert (ca["test"]["gained"], ca["dev"]["gained"], ca["train"]["gained"], ca["pooled"]["gained"]) == (2, 2, 4, 8)
    assert set(summary["nulls"]["bc_datasets"]) and summary["nulls"]["majority_action"]
    it1 = summary["dagger"]["learned_rule"][1]
    assert it1["new_states"] == it1["new_states_learner"] + it1["new_states_oracle"]
    from controller.report.markdown import render_report

    text = render_report(summary)
    assert "## Nulls and imitation baselines" in text and "`majority_action`" in text
    assert "test +2 (2 -> 4 of 4)" in text and "of which learner" in text
    assert set(fixed_policies(samples=True)) <= set(pr)
