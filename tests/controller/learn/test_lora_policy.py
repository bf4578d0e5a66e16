"""The LoRA controller policy on the tiny base: learns a trivial mapping, stays valid, is
deterministic, round-trips through save/load, and the shuffled-label control learns nothing."""

import random

import pytest

from controller.learn.lora import (LoraPolicy, LoraPolicyConfig, PolicyExample, shuffle_labels,
                             train_lora_policy)
from controller.learn.lora_scoring import action_token_ids, render_tokens_estimate, score_actions

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

VALID = ("DIRECT", "FIX", "PROGRAM")
WORDS = "rows cols shape match mismatch tokens error syntax timeout round repairs left parse ok".split()


def make_examples(n, seed):
    """pass=yes -> PROGRAM, pass=no -> FIX, DIRECT always valid; the cue sits among noise lines."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        yes = rng.random() < 0.5
        lines = ["state: after_round", f"round {rng.randint(0, 2)}", f"pass={'yes' if yes else 'no'}",
                 "notes: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 40))),
                 f"rows={rng.randint(1, 30)} cols={rng.randint(1, 9)}"]
        rng.shuffle(lines)
        out.append(PolicyExample("\n".join(lines), VALID, "PROGRAM" if yes else "FIX"))
    return out


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tiny_base") / "base")


@pytest.fixture(scope="module")
def trained(base_dir, tmp_path_factory):
    cfg = LoraPolicyConfig(cache_dir=base_dir)
    out = str(tmp_path_factory.mktemp("adapter"))
    return train_lora_policy(make_examples(400, 0), cfg, out, progress=False), cfg, out


def accuracy(policy, examples):
    chosen = policy.choose([e.prompt for e in examples], [e.valid_actions for e in examples])
    return sum(c == e.label for c, e in zip(chosen, examples)) / len(examples)


def test_learns_trivial_mapping(trained):
    policy, _, _ = trained
    assert accuracy(policy, make_examples(200, 1)) >= 0.95
    assert policy.meta["train_s"] > 0 and policy.meta["n_trained"] == 400


def test_choose_returns_only_valid_actions(trained):
    policy, _, _ = trained
    held = make_examples(40, 2)
    # restrict each state to a random valid subset, including single-action ones
    rng = random.Random(0)
    valid = [tuple(rng.sample(["DIRECT", "WRITE", "FIX", "PROGRAM"], rng.randint(1, 4))) for _ in held]
    chosen = policy.choose([e.prompt for e in held], valid)
    assert all(c in v for c, v in zip(chosen, valid))
    scores = policy.scores([e.prompt for e in held], valid)
    assert all(set(s) == set(v) and all(x <= 0 for x in s.values()) for s, v in zip(scores, valid))
    # a pass=yes state where PROGRAM is not offered falls back among what is
    yes = next(e for e in held if "pass=yes" in e.prompt)
    assert policy.choose([yes.prompt], [("DIRECT", "FIX")])[0] in ("DIRECT", "FIX")


def test_scores_do_not_depend_on_batch_padding(trained):
    policy, _, _ = trained
    short, long_ = "pass=yes", "pass=no\n" + " ".join(WORDS * 6)
    alone = policy.scores([short], [VALID])[0]
    padded = policy.scores([short, long_], [VALID, VALID])[0]
    assert alone == pytest.approx(padded, abs=1e-4)


def test_save_load_round_trip(trained):
    policy, cfg, out = trained
    held = make_examples(30, 3)
    args = ([e.prompt for e in held], [e.valid_actions for e in held])
    again = LoraPolicy.load(out, cfg)
    assert again.scores(*args) == policy.scores(*args)


def test_deterministic_for_a_seed(base_dir, tmp_path):
    cfg = LoraPolicyConfig(cache_dir=base_dir, max_steps=8, batch_size=8)
    data, held = make_examples(64, 4), make_examples(10, 5)
    args = ([e.prompt for e in held], [e.valid_actions for e in held])
    a = train_lora_policy(data, cfg, str(tmp_path / "a"), progress=False).scores(*args)
    b = train_lora_policy(data, cfg, str(tmp_path / "b"), progress=False).scores(*args)
    assert a == b
    other = LoraPolicyConfig(cache_dir=base_dir, max_steps=8, batch_size=8, seed=1)
    assert train_lora_policy(data, other, str(tmp_path / "c"), progress=False).scores(*args) != a


def test_shuffled_control_does_not_learn(base_dir, tmp_path):
    cfg = LoraPolicyConfig(cache_dir=base_dir, shuffle_labels=True)
    policy = train_lora_policy(make_examples(400, 0), cfg, str(tmp_path), progress=False)
    assert 0.3 <= accuracy(policy, make_examples(200, 1)) <= 0.7


def test_shuffle_labels_keeps_labels_valid():
    data = [PolicyExample("s", ("DIRECT", "WRITE"), "WRITE"),
            PolicyExample("p", ("DIRECT", "PROGRAM"), "PROGRAM"),
            PolicyExample("f", ("DIRECT", "FIX"), "DIRECT"),
            PolicyExample("f", ("DIRECT", "FIX"), "FIX")] * 10
    shuffled = shuffle_labels(data, seed=0)
    assert all(s.label in s.valid_actions for s in shuffled)
    assert [s.prompt for s in shuffled] == [d.prompt for d in data]
    # a tool label moved to another state becomes that state's tool action, so the DIRECT rate holds
    assert sum(s.label == "DIRECT" for s in shuffled) == sum(d.label == "DIRECT" for d in data)
    assert shuffle_labels(data, seed=0) == shuffled


def test_multi_token_actions_match_manual_sum(tmp_path):
    """A byte-sized vocabulary splits the action words; the batched sum matches a manual one."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tracegen.tiny_model import build_tiny_model

    path = build_tiny_model(str(tmp_path / "b"), arch="llama", vocab_size=300)
    tok, model = AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path)
    ids = action_token_ids(tok)
    assert len(ids["PROGRAM"]) > 1
    prompts, valid = ["pass=yes", "a longer state line\nround 2"], [("DIRECT", "PROGRAM"), ("FIX",)]
    with torch.no_grad():
        got = score_actions(model, tok, ids, prompts, valid, max_length=64)
        for p, va, s in zip(prompts, valid, got):
            for a, x in zip(va, s.tolist()):
                pre = tok(p + "\nAction:", add_special_tokens=False)["input_ids"]
                seq = torch.tensor([pre + ids[a]])
                logp = torch.log_softmax(model(seq).logits[0, :-1], -1)
                want = sum(logp[len(pre) - 1 + j, t].item() for j, t in enumerate(ids[a]))
                assert x == pytest.approx(want, abs=1e-4)


def test_rejects_bad_examples(base_dir, tmp_path):
    cfg = LoraPolicyConfig(cache_dir=base_dir, max_steps=1)
    with pytest.raises(ValueError, match="no trainable examples"):
        train_lora_policy([], cfg, str(tmp_path))
    with pytest.raises(ValueError, match="no trainable examples"):
        train_lora_policy([PolicyExample("x", ("DIRECT",), "DIRECT")], cfg, str(tmp_path))
    with pytest.raises(ValueError, match="not among valid_actions"):
        train_lora_policy([PolicyExample("x", ("DIRECT", "WRITE"), "FIX")], cfg, str(tmp_path))
    with pytest.raises(ValueError, match="subset"):
        train_lora_policy([PolicyExample("x", ("DIRECT", "STOP"), "DIRECT")], cfg, str(tmp_path))


def test_single_label_class_trains(base_dir, tmp_path):
    cfg = LoraPolicyConfig(cache_dir=base_dir, max_steps=30, batch_size=8)
    data = [PolicyExample(f"state {i}", ("DIRECT", "WRITE"), "WRITE") for i in range(16)]
    policy = train_lora_policy(data, cfg, str(tmp_path), progress=False)
    assert policy.choose(["state 99"], [("DIRECT", "WRITE")]) == ["WRITE"]


def test_render_tokens_estimate(trained):
    policy, _, _ = trained
    prompt = "state: start\nround 0\npass=yes"
    exact = render_tokens_estimate(prompt, policy.tokenizer)
    assert exact == len(policy.tokenizer(prompt + "\nAction:", add_special_tokens=False)["input_ids"])
    assert render_tokens_estimate(prompt) >= exact > 0


# ---------------------------------------------------------------- speed-relevant scoring paths


def test_merge_examples_sums_label_weights():
    from controller.learn.lora import merge_examples

    ex = [PolicyExample("s", VALID, "FIX", 1.0), PolicyExample("s", VALID, "FIX", 0.5),
          PolicyExample("s", VALID, "PROGRAM", 2.0), PolicyExample("t", VALID, "FIX", 1.0),
          PolicyExample("s", ("DIRECT", "FIX"), "FIX", 1.0)]
    rows = merge_examples(ex)
    assert [(r.prompt, r.valid_actions) for r in rows] == [("s", VALID), ("t", VALID), ("s", ("DIRECT", "FIX"))]
    assert rows[0].targets == (("FIX", 1.5), ("PROGRAM", 2.0)) and rows[0].weight == 3.5


def test_kept_positions_score_like_all_positions(trained):
    """logits_to_keep (only the action positions) gives the scores of the full-vocabulary-everywhere
    baseline, in both scoring modes; first_token equals the sequence mode for one-token actions."""
    policy, _, _ = trained
    tok, model = policy.tokenizer, policy.model
    ids = action_token_ids(tok)
    held = make_examples(6, 9)
    prompts, va = [e.prompt for e in held], [e.valid_actions for e in held]
    with torch.inference_mode():
        kept = score_actions(model, tok, ids, prompts, va, 256, mode="first_token")
        full = score_actions(model, tok, ids, prompts, va, 256, mode="first_token", all_logits=True)
        seq = score_actions(model, tok, ids, prompts, va, 256, mode="sequence")
        seq_full = score_actions(model, tok, ids, prompts, va, 256, mode="sequence", all_logits=True)
    for a, b, c, d in zip(kept, full, seq, seq_full):
        assert torch.allclose(a, b, atol=1e-5) and torch.allclose(c, d, atol=1e-5)
        assert torch.allclose(a, c, atol=1e-5)  # the tiny tokenizer's actions are single tokens


def test_first_token_mode_refuses_shared_first_tokens():
    from controller.learn.lora_scoring import resolve_score_mode

    shared = {"DIRECT": [5, 6], "WRITE": [5, 7], "FIX": [8], "PROGRAM": [9]}
    assert resolve_score_mode("auto", shared) == "sequence"
    assert resolve_score_mode("auto", {"DIRECT": [1, 2], "WRITE": [3], "FIX": [4], "PROGRAM": [5]}) == "first_token"
    with pytest.raises(ValueError):
        resolve_score_mode("first_token", shared)


def test_early_stopping_on_dev_restores_the_best_adapter(base_dir, tmp_path):
    """Dev labels are the opposite of train's: the dev loss only gets worse after the first
    evaluation, so training stops after ``patience`` more and keeps the first evaluation's weights."""
    train = make_examples(200, 4)
    flipped = {"PROGRAM": "FIX", "FIX": "PROGRAM"}
    dev = [PolicyExample(e.prompt, e.valid_actions, flipped[e.label]) for e in make_examples(60, 5)]
    cfg = LoraPolicyConfig(cache_dir=base_dir, max_steps=120, eval_every=5, patience=2)
    pol = train_lora_policy(train, cfg, str(tmp_path / "a"), progress=False, dev_examples=dev)
    early = pol.meta["early_stopping"]
    assert early["stopped_at"] is not None and pol.meta["steps"] == early["stopped_at"] < 120
    best = min(early["evaluations"], key=lambda e: e[1])
    assert early["best_step"] == best[0]
    # the restored weights give the best evaluation's dev loss
    from controller.learn.lora import _dev_loss, merge_examples

    got = _dev_loss(pol.model, pol.tokenizer, action_token_ids(pol.tokenizer), merge_examples(dev), cfg)
    assert got == pytest.approx(best[1], abs=1e-4)


def test_lora_layers_adapts_only_the_last_layers(base_dir):
    from peft import get_peft_model

    from controller.learn.lora import _load_base, _resolve_base, lora_config

    cfg = LoraPolicyConfig(cache_dir=base_dir, lora_layers=1)
    model, _ = _load_base(_resolve_base(cfg)[0], "cpu")
    last = model.config.num_hidden_layers - 1
    peft_model = get_peft_model(model, lora_config(model, cfg))
    trained = [n for n, p in peft_model.named_parameters() if p.requires_grad]
    assert trained and all(f".layers.{last}." in n for n in trained)
