"""Record tests/data/chain_golden.json: the chain environment's outcomes on the version-1 traces in
tests/data/v1_library_traces.jsonl (a library run written before trace schema v2).

Run it from a checkout of the code BEFORE the tree environment (the pilot's chain, e.g. commit
048e674), so the golden file says what the chain gives; tests/tracegen/test_tree_rollout.py checks that the
tree environment with --program-samples 1 reproduces it:

    PYTHONPATH=$PWD python tests/data/make_chain_golden.py tests/data/chain_golden.json
"""
import json, sys
from tracegen.records import read_traces
from controller.study.experiment import by_split, _scored
from controller.env.policies import Oracle
from controller.env.registry import fixed_policies
from controller.learn.rule import select_rule
from controller.env.simulate import simulate
from controller.learn.training import full_state_pairs, labelled
from controller.learn.dagger import run_dagger
from controller.learn.rule import fit_rule

recs = read_traces("tests/data/v1_library_traces.jsonl")
splits = by_split(recs)
train = _scored(splits["train"])
pols = fixed_policies()
pols["oracle_seq"] = Oracle(recs)
pols["oracle_lam0.3"] = Oracle(recs, 0.3)
data = labelled(full_state_pairs(train))
rule, _ = select_rule(data, _scored(splits["dev"]), seed=0)
pols["learned_rule"] = rule
final, hist = run_dagger(lambda d, i: fit_rule(d, rule.model_name, 0, name="d"), train, iters=2)
pols["learned_rule_dagger"] = final
out = {"rule_model": rule.model_name, "n_train_states": len(data), "dagger_sizes": [h["n_states"] for h in hist]}
for n, p in pols.items():
    out[n] = [[o["case_id"], o["actions"], o["source"], o["correct"], o["program_generations"], o["generated_tokens"]] for o in simulate(p, recs)]
json.dump(out, open(sys.argv[1], "w"), separators=(",", ":"))
print({k: v for k, v in out.items() if not isinstance(v, list) or k=="dagger_sizes"})
