"""DAgger on the tree: a small hand-built environment where behaviour cloning errs off the
oracle's path and DAgger, by visiting and labelling the learner's own states, recovers."""
from controller.learn.dagger import run_dagger
from controller.learn.rule import fit_rule
from controller.env.simulate import simulate
from controller.learn.training import full_state_pairs, labelled
from tracefactory import ANSWER, WRONG, make_tree_record

DIRECT = [["x"], ["y"], ["z"]]  # agrees with no program output in any cell
ONE_COL_WRONG = [["5"], ["6"], ["7"]]
OTHER = [["Di"], ["Di"], ["Di"]]


def _env():
    """Three kinds of case (same task, same direct answer, so the start states look alike):

    A: the first program passes but is wrong, and its output has the wrong column count; samples
       1 and 2 pass and are right. Oracle: WRITE, RESAMPLE, RESAMPLE, PROGRAM (2 of 3 agree).
    B: the first program passes and is right (one column). Oracle: WRITE, PROGRAM.
    D: the direct answer is right; the first program looks like A's, samples 1 and 2 pass with
       two more different outputs. Oracle: DIRECT.
    Behaviour cloning sees only the recorded sample-0 chain: it learns "resample a program with the
    wrong column count, commit one with the right count", so after a RESAMPLE (a state it never
    saw) it commits at the 1-1 tie and the commit rule picks the wrong first program.

    This is the majority-commit action space (``commit_any=False``): with PROGRAM:j the oracle
    commits sample 1 right after the first RESAMPLE, where A and D look the same (see
    ``test_nulls.py`` for that action space).
    """
    recs = []
    for i in range(4):
        recs.append(make_tree_record(f"a/a_{i}", "a", direct=DIRECT, answer=ANSWER, max_repairs=0,
                                     chains=[[(True, WRONG)], [(True, ANSWER)], [(True, ANSWER)]]))
        recs.append(make_tree_record(f"b/b_{i}", "b", direct=DIRECT, answer=ANSWER, max_repairs=0,
                                     chains=[[(True, ANSWER)], [(True, ANSWER)], [(True, ANSWER)]]))
        recs.append(make_tree_record(f"d/d_{i}", "d", direct=DIRECT, answer=DIRECT, max_repairs=0,
                                     chains=[[(True, WRONG)], [(True, ONE_COL_WRONG)], [(True, OTHER)]]))
    return recs


def _fit(data, i=None):
    return fit_rule(data, "tree_depth2", seed=0, name="rule")


def _accuracy(policy, recs):
    return sum(bool(o["correct"]) for o in simulate(policy, recs)) / len(recs)


def test_dagger_visits_new_tree_states_and_beats_behaviour_cloning():
    recs = _env()
    bc = _fit(labelled(full_state_pairs(recs), commit_any=False))
    bc_acc = _accuracy(bc, recs)
    final, hist = run_dagger(_fit, recs, iters=2, beta0=0.5, seed=0, commit_any=False)
    assert bc_acc < 1.0  # behaviour cloning errs off the oracle's path ...
    assert _accuracy(final, recs) == 1.0  # ... and DAgger recovers
    later = hist[1:]
    assert all(h["new_states"] > 0 for h in later)  # rollouts reach states behaviour cloning never had
    assert sum(h["added_states"] for h in later) > 0  # and the aggregated dataset grows by them
    assert hist[-1]["dataset_size"] > hist[0]["dataset_size"]
    assert [h["beta"] for h in hist] == [1.0, 0.5, 0.0]
    for h in hist:
        assert h["states_visited"] >= h["new_states"] and h["dataset_size"] == h["n_states"]
        assert h["new_states"] == h["new_states_learner"] + h["new_states_oracle"]
    assert hist[0]["new_states_learner"] == 0 and hist[0]["states_visited_learner"] == 0  # beta = 1: oracle only
    assert hist[-1]["new_states_oracle"] == 0  # beta = 0: every step after the start is the learner's
    assert any("RESAMPLE" in o["actions"] for o in simulate(final, recs))


def _families(k: int):
    """``_env``'s three kinds of case in six families (two of each), with ``k`` program samples."""
    recs = []
    for fam in range(6):
        kind = "abd"[fam % 3]
        chains = {"a": [[(True, WRONG)], [(True, ANSWER)], [(True, ANSWER)]],
                  "b": [[(True, ANSWER)], [(True, ANSWER)], [(True, ANSWER)]],
                  "d": [[(True, WRONG)], [(True, ONE_COL_WRONG)], [(True, OTHER)]]}[kind][:k]
        for i in range(3):
            recs.append(make_tree_record(f"{kind}{fam}/{kind}{fam}_{i}", f"{kind}{fam}", direct=DIRECT, max_repairs=0,
                                         answer=DIRECT if kind == "d" else ANSWER, chains=chains))
    return recs


def test_dagger_is_cross_validated_where_it_can_add_a_state():
    from controller.study.cv import run_cv
    from controller.study.experiment import ExperimentConfig

    cfg = ExperimentConfig(progress=False, cv_folds=3, dagger_iters=1, rule_lambdas=(0.0,), frontier_lambdas=(0.0,))
    k3 = run_cv(_families(3), cfg, log=lambda *a: None)
    pooled = k3.pooled["learned_rule_dagger"]
    assert len(pooled) == 18 and {o["fold"] for o in pooled} == {0, 1, 2}  # every case held out once
    assert "learned_rule_dagger" in k3.summary["pooled"]
    k1 = run_cv(_families(1), cfg, log=lambda *a: None)  # K = 1: nothing off the recorded chain
    assert "learned_rule_dagger" not in k1.pooled and "learned_rule_dagger" not in k1.summary["pooled"]
