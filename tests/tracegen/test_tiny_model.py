"""The tiny base model: builds for both archs, reloads through from_pretrained, generates."""

import json
import os

import pytest

from tracegen.tiny_model import MARKER, build_tiny_model

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {arch: build_tiny_model(str(root / arch), arch=arch) for arch in ("qwen3_5", "llama")}


@pytest.mark.parametrize("arch", ["qwen3_5", "llama"])
def test_reloads_and_generates(builds, arch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(builds[arch])
    model = AutoModelForCausalLM.from_pretrained(builds[arch])
    assert model.config.model_type == {"qwen3_5": "qwen3_5_text", "llama": "llama"}[arch]
    assert os.path.exists(os.path.join(builds[arch], "model.safetensors"))
    assert tok.pad_token_id is not None and tok.pad_token_id != tok.eos_token_id
    enc = tok(["a table", "a much longer input table with rows"], return_tensors="pt",
              padding=True, padding_side="left")
    out = model.generate(**enc, max_new_tokens=4, do_sample=False)
    assert out.shape == (2, enc["input_ids"].shape[1] + 4)
    assert all(isinstance(t, str) for t in tok.batch_decode(out))


def test_qwen_mixes_linear_and_full_attention(builds):
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(builds["qwen3_5"])
    assert set(cfg.layer_types) == {"linear_attention", "full_attention"}


@pytest.mark.parametrize("thinking,tail", [(False, "<think>\n\n</think>\n\n"), (True, "<think>\n")])
def test_chat_template(builds, thinking, tail):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(builds["qwen3_5"])
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True,
                                   enable_thinking=thinking)
    assert text == ("<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                    "<|im_start|>assistant\n" + tail)
    bare = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=False)
    assert bare.endswith("hi<|im_end|>\n")
    # the ChatML markers are single special tokens
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids.count(tok.convert_tokens_to_ids("<|im_start|>")) == 3


def test_idempotent_and_reproducible(tmp_path, builds):
    first = build_tiny_model(str(tmp_path / "a"), seed=3)
    stamp = os.path.getmtime(os.path.join(first, "model.safetensors"))
    assert build_tiny_model(first, seed=3) == first
    assert os.path.getmtime(os.path.join(first, "model.safetensors")) == stamp  # reused
    second = build_tiny_model(str(tmp_path / "b"), seed=3)
    for name in ("model.safetensors", "tokenizer.json"):
        with open(os.path.join(first, name), "rb") as a, open(os.path.join(second, name), "rb") as b:
            assert a.read() == b.read()
    with open(os.path.join(first, MARKER)) as fh:
        assert json.load(fh)["seed"] == 3
    # other build args replace a stale build of ours
    build_tiny_model(first, seed=4)
    with open(os.path.join(first, MARKER)) as fh:
        assert json.load(fh)["seed"] == 4


def test_texts_shape_the_tokenizer(tmp_path):
    from transformers import AutoTokenizer

    word = "zxqvjk"
    plain = AutoTokenizer.from_pretrained(build_tiny_model(str(tmp_path / "p")))
    fitted = AutoTokenizer.from_pretrained(build_tiny_model(str(tmp_path / "f"), texts=[word] * 50))
    assert len(fitted.tokenize(" " + word)) < len(plain.tokenize(" " + word))


def test_refuses_foreign_folder_and_bad_args(tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not made by build_tiny_model"):
        build_tiny_model(str(tmp_path))
    assert (tmp_path / "mine.txt").read_text() == "keep me"
    with pytest.raises(ValueError, match="arch"):
        build_tiny_model(str(tmp_path / "x"), arch="gpt9")
