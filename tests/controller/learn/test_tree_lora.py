"""The LoRA policy on tree states: it reads the rendered agreement line and can answer RESAMPLE."""
import pytest

from controller.env.state import base_actions, visible_state
from controller.learn.training import labelled
from tracefactory import ANSWER, WRONG, make_tree_record

pytest.importorskip("torch")
pytest.importorskip("peft")


@pytest.mark.slow
def test_lora_policy_learns_to_resample_on_disagreement(tmp_path):
    from controller.learn.lora import LoraPolicyConfig, PolicyExample, train_lora_policy

    recs = []
    for i in range(12):  # two passing programs that disagree -> the oracle draws a third
        recs.append(make_tree_record(f"a/a_{i}", "a", max_repairs=0,
                                     chains=[[(True, WRONG)], [(True, ANSWER)], [(True, ANSWER)]]))
        recs.append(make_tree_record(f"b/b_{i}", "b", max_repairs=0,  # they agree -> commit
                                     chains=[[(True, ANSWER)], [(True, ANSWER)], [(True, ANSWER)]]))
    # the LoRA policy acts over the majority-commit action space (its vocabulary has no PROGRAM:j)
    data = labelled([(r, visible_state(r, (1, 1))) for r in recs], commit_any=False)
    assert set(data.labels) == {"RESAMPLE", "PROGRAM"}
    assert "passing: 2 distinct=2" in data.states[0].text and "passing: 2 distinct=1" in data.states[1].text
    # equal weights: with lam = 0 committing early in a "b" case only saves cost (regret weight 0.05)
    examples = [PolicyExample(s.text, base_actions(s.valid_actions), l, 1.0) for s, l in zip(data.states, data.labels)]
    cfg = LoraPolicyConfig(cache_dir=str(tmp_path / "base"), max_steps=60, batch_size=8)
    pol = train_lora_policy(examples, cfg, str(tmp_path / "adapter"), progress=False)
    chosen = pol.choose([s.text for s in data.states], [base_actions(s.valid_actions) for s in data.states])
    assert chosen == data.labels
