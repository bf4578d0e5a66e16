"""The LoRA policy's task prompt (``--lora-prompt task``): the block shows the task, and a
pretrained-format base loaded through ``from_pretrained`` trains on it and produces decisions."""
from types import SimpleNamespace

import pytest

from controller.env.state import base_actions, visible_state, visible_view
from controller.learn.task_prompt import prompt_for, task_text, use_records
from controller.learn.training import labelled
from tracefactory import ANSWER, WRONG, make_record


def _records():
    recs = []
    for i in range(6):  # program passes and is right: PROGRAM; program fails: DIRECT
        recs.append(make_record(f"a/a_{i}", "a", "train", direct=WRONG, rounds=[(True, ANSWER)], max_repairs=0))
        recs.append(make_record(f"b/b_{i}", "b", "train", direct=ANSWER, rounds=[(False, None)], max_repairs=0))
    return recs


def test_task_block_shows_the_task_and_feedback():
    recs = _records()
    use_records(recs)
    s = visible_state(recs[1], (1,))
    p = prompt_for(s, "task")
    assert p.endswith(s.text) and prompt_for(s, "state") == s.text
    for part in ("example input:\nAnn | 3\nBob | 4", "example output:\nAnn\nBob", "new input: 3x2 header: Cy | 5",
                 "direct answer (3x1):\nCy\nDi\nEd", "program round 0 output on the example (2x2):",
                 "feedback: wrong_output output differs"):
        assert part in p, part
    start = task_text(visible_view(recs[0], ()))
    assert "program round" not in start  # nothing revealed yet: no program block
    use_records([])
    with pytest.raises(KeyError):
        prompt_for(s, "task")


@pytest.mark.slow
def test_pretrained_base_trains_on_task_prompt(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from controller.learn.lora import LoraPolicyConfig
    from controller.learn.lora_policy import LoraAdapter, lora_fit
    from tracegen.tiny_model import build_tiny_model

    recs = _records()
    use_records(recs)
    data = labelled([(r, visible_state(r, (1,))) for r in recs], commit_any=False)
    prompts = [prompt_for(s, "task") for s in data.states]
    base = build_tiny_model(str(tmp_path / "base"), texts=prompts)  # a pretrained-format folder
    lcfg = LoraPolicyConfig(base_model=base, prompt="task", max_steps=3, batch_size=4, max_length=512,
                            eval_every=0)
    cfg = SimpleNamespace(lora=lcfg, seed=0, adapters_dir=str(tmp_path / "adapters"), progress=False)
    meta: dict = {}
    pol = lora_fit(cfg, "lora_task", False, meta_out=meta)(data)
    assert isinstance(pol, LoraAdapter) and pol.prompt == "task"
    assert pol.inner.meta["tiny_base"] is False and pol.inner.meta["steps"] == 3
    assert pol.inner.meta["config"]["prompt"] == "task"
    chosen = pol.act(data.states)
    assert len(chosen) == len(data.states)
    assert all(c in base_actions(s.valid_actions) for c, s in zip(chosen, data.states))
    assert meta["lora_task"]["train_s"] > 0
