"""K program samples at temperature > 0 that all come back the same (a server sampling greedily,
as ``transformers serve`` does without do_sample in the model's generation config) are counted."""
import json
from types import SimpleNamespace

from tracefactory import WRONG, make_tree_record
from tracegen.rollout import RolloutConfig, identical_samples


def test_identical_samples_are_counted_only_when_sampling_was_asked_for(tmp_path):
    path = tmp_path / "t.jsonl"
    rec = make_tree_record(chains=[[(False, WRONG)], [(False, WRONG)]])  # both samples' raw text alike
    other = make_tree_record("fam_u/fam_u_1", "fam_u", chains=[[(False, WRONG)], [(False, WRONG)]])
    other["samples"][0][0]["raw"] = "```python\n# another program\n```"
    path.write_text(json.dumps(rec) + "\n" + json.dumps(other) + "\n")
    cfg = RolloutConfig(program_samples=2)
    sampled = SimpleNamespace(name="openai", config=SimpleNamespace(temperature=0.7))
    assert identical_samples(path, sampled, cfg) == 1
    assert identical_samples(path, SimpleNamespace(name="openai", config=SimpleNamespace(temperature=0.0)), cfg) == 0
    assert identical_samples(path, SimpleNamespace(name="synth", config=SimpleNamespace(temperature=0.7)), cfg) == 0
    assert identical_samples(path, sampled, RolloutConfig(program_samples=1)) == 0
