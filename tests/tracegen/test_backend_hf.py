"""The hf backend end to end on tiny random models saved locally and loaded with from_pretrained.

The builder's random models give nearly the same greedy output whatever the prompt (tiny
weights), so the fixture adds noise to the weights, embeddings included, before saving: greedy outputs then differ from
prompt to prompt and batched-vs-single comparisons mean something.
"""
import json

import pytest

from tracegen.backends import BackendConfig, GenerationRequest, Task, get_backend
from tracegen.backends._tokens import render_chat, split_completion
from tracegen.backends.cache import CachedBackend
from tracegen.prompts import direct_messages, fix_messages, write_messages
from tracegen.backends.base import Feedback

pytest.importorskip("transformers")


def _noisy_copy(src, dst):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(src)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.add_(torch.randn(p.shape, generator=gen) * (0.3 if "embed" not in name else 1.0))
    model.save_pretrained(dst)
    AutoTokenizer.from_pretrained(src).save_pretrained(dst)
    return str(dst)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from tracegen.tiny_model import build_tiny_model

    root = tmp_path_factory.mktemp("tiny")
    return {arch: _noisy_copy(build_tiny_model(str(root / arch), arch=arch), root / f"{arch}_noisy")
            for arch in ("qwen3_5", "llama")}


def _requests(n=5):
    reqs = []
    for i in range(n):
        task = Task.from_tables(f"f/c{i}", [["a b"] * (i + 1)], [["b"]], [["x", str(i)]])
        if i % 3 == 0:
            reqs.append(GenerationRequest("direct", direct_messages(task), task))
        elif i % 3 == 1:
            reqs.append(GenerationRequest("write", write_messages(task), task))
        else:
            fb = Feedback("exception", "IndexError: list index out of range")
            reqs.append(GenerationRequest("fix", fix_messages(task, "def transform(t):\n    return t[9]", fb), task, round=1))
    return reqs


@pytest.mark.parametrize("arch", ["qwen3_5", "llama"])
def test_batched_equals_one_at_a_time(models, arch):
    reqs = _requests(5)
    batched = get_backend(BackendConfig(name="hf", model=models[arch], max_new_tokens=6, batch_size=3))
    assert batched.loaded.model_class == "AutoModelForCausalLM"
    out = batched.generate(reqs)
    single = get_backend(BackendConfig(name="hf", model=models[arch], max_new_tokens=6, batch_size=1))
    one = single.generate(reqs)
    assert [c.text for c in out] == [c.text for c in one]
    assert len({c.text for c in out}) > 1  # outputs depend on the prompt
    tok = batched.loaded.tokenizer
    for r, c in zip(reqs, out):
        prompt = render_chat(tok, r.messages, False)
        assert c.prompt_tokens == len(tok(prompt, add_special_tokens=False).input_ids)
        assert 1 <= c.completion_tokens <= 6 and c.latency_ms > 0
        assert (c.finish_reason == "length") == (c.completion_tokens == 6)
        assert not c.cached


def test_thinking_flag_reaches_the_chat_template(models):
    reqs = _requests(1)
    off = get_backend(BackendConfig(name="hf", model=models["llama"], max_new_tokens=2))
    on = get_backend(BackendConfig(name="hf", model=models["llama"], max_new_tokens=2, enable_thinking=True))
    tok = off.loaded.tokenizer
    assert render_chat(tok, reqs[0].messages, False).endswith("<think>\n\n</think>\n\n")
    assert render_chat(tok, reqs[0].messages, True).endswith("<think>\n")
    assert off.generate(reqs)[0].prompt_tokens > on.generate(reqs)[0].prompt_tokens


def test_stop_token_ends_a_completion(models):
    b = get_backend(BackendConfig(name="hf", model=models["llama"], max_new_tokens=5))
    reqs = _requests(1)
    tok, model = b.loaded.tokenizer, b.loaded.model
    enc = tok(render_chat(tok, reqs[0].messages, False), return_tensors="pt", add_special_tokens=False)
    first_id = int(model.generate(**enc, max_new_tokens=1, do_sample=False)[0, -1])
    assert first_id not in b.loaded.stop_ids and b.generate(reqs)[0].finish_reason == "length"
    b.loaded.stop_ids.append(first_id)
    stopped = b.generate(reqs)[0]
    assert (stopped.text, stopped.completion_tokens, stopped.finish_reason) == ("", 1, "stop")


def test_progress_hears_a_request_that_stops_inside_its_batch(models):
    """With ``on_request_done`` set, a row that reaches its stop token is reported at that step,
    while the batch still runs; the rows cut at the token limit when the batch returns. The outputs
    are the same as without the hook."""
    b = get_backend(BackendConfig(name="hf", model=models["llama"], max_new_tokens=6, batch_size=3))
    reqs = _requests(3)
    tok, model = b.loaded.tokenizer, b.loaded.model
    enc = tok(render_chat(tok, reqs[0].messages, False), return_tensors="pt", add_special_tokens=False)
    b.loaded.stop_ids.append(int(model.generate(**enc, max_new_tokens=1, do_sample=False)[0, -1]))
    plain = b.generate(reqs)
    assert plain[0].finish_reason == "stop" and plain[0].completion_tokens == 1
    events, inner = [], model.generate

    def generate(*a, **kw):
        out = inner(*a, **kw)
        events.append("batch returned")
        return out

    model.generate = generate
    b.on_request_done = events.append
    steps = []
    b.on_decode_step = lambda k, limit: steps.append((k, limit))
    watched = b.generate(reqs)
    assert steps == [(k, 6) for k in range(1, 7)]  # one batch, decoded to the limit
    stopped = sum(c.finish_reason == "stop" for c in plain)
    assert stopped >= 1  # request 0 at its first token
    assert events == [1] * stopped + ["batch returned"] + ([3 - stopped] if stopped < 3 else [])
    assert [(c.text, c.completion_tokens, c.finish_reason) for c in watched] == [
        (c.text, c.completion_tokens, c.finish_reason) for c in plain]


def test_finish_watch_counts_each_row_once_and_stops_none():
    import torch

    from tracegen.backends.hf import finish_watch

    heard, decoded = [], []  # stop ids 2 and 3; a finished row is padded with 2
    watch = finish_watch([2, 3], heard.append, decoded.append)
    steps = [[9, 2, 9], [2, 2, 9], [2, 2, 3], [2, 2, 2]]
    ids = torch.tensor([[7, 7, 7], [7, 7, 7]]).T  # prompts of two tokens
    for step in steps:
        ids = torch.cat([ids, torch.tensor([step]).T], dim=1)
        assert not watch(ids, None).any()
    assert heard == [1, 1, 1] and watch.reported == 3 and decoded == [1, 2, 3, 4]


def test_split_completion():
    assert split_completion([5, 6, 2, 9, 9], [2]) == ([5, 6], 3, "stop")
    assert split_completion([5, 6, 7], [2]) == ([5, 6, 7], 3, "length")


def test_sampling_repeats_with_a_seed(models):
    def run(seed):
        b = get_backend(BackendConfig(name="hf", model=models["llama"], max_new_tokens=8, batch_size=4,
                                      temperature=1.0, top_p=0.95, seed=seed))
        return [c.text for c in b.generate(_requests(4))]

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_multimodal_config_loads_as_image_text_to_text(models, tmp_path):
    import torch
    from transformers import AutoModelForImageTextToText, AutoTokenizer, Qwen3_5Config

    text = json.loads(open(f"{models['qwen3_5']}/config.json").read())
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=text["hidden_size"],
                  patch_size=8, spatial_merge_size=2, temporal_patch_size=2)
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(Qwen3_5Config(text_config=text, vision_config=vision))
    model.save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(models["qwen3_5"]).save_pretrained(tmp_path)
    b = get_backend(BackendConfig(name="hf", model=str(tmp_path), max_new_tokens=3, batch_size=2))
    assert b.loaded.model_class == "AutoModelForImageTextToText"
    out = b.generate(_requests(2))
    assert all(c.completion_tokens >= 1 and c.prompt_tokens > 100 for c in out)


def test_cache_makes_a_second_run_generate_nothing(models, tmp_path):
    cfg = BackendConfig(name="hf", model=models["llama"], max_new_tokens=4, batch_size=2)
    reqs = _requests(3)

    def counted(backend):
        calls = []
        model = backend.loaded.model
        real = model.generate
        model.generate = lambda *a, **k: calls.append(1) or real(*a, **k)
        return calls

    first = get_backend(cfg)
    calls1 = counted(first)
    out1 = CachedBackend(first, str(tmp_path)).generate(reqs)
    assert len(calls1) == 2
    second = get_backend(cfg)
    calls2 = counted(second)
    out2 = CachedBackend(second, str(tmp_path)).generate(reqs)
    assert calls2 == [] and all(c.cached for c in out2)
    assert [c.text for c in out1] == [c.text for c in out2]


def test_clear_errors(models, tmp_path):
    with pytest.raises(ValueError, match="model: the hf backend needs one"):  # the field (CLI: --model)
        get_backend(BackendConfig(name="hf"))
    with pytest.raises(ValueError, match="cannot load model config"):
        get_backend(BackendConfig(name="hf", model=str(tmp_path / "nothing")))
    with pytest.raises(ValueError, match="needs a CUDA GPU"):
        get_backend(BackendConfig(name="hf", model=models["llama"], load_in_4bit=True, device="cpu"))


def test_independent_samples_of_one_prompt_differ(models):
    """Sample j is seeded with --seed + j: asked one at a time (as a resumed or cached run does),
    samples 0, 1 and 2 of the same prompt differ, and each repeats."""
    b = get_backend(BackendConfig(name="hf", model=models["llama"], max_new_tokens=12, temperature=1.0, seed=3))
    req = _requests(2)[1]
    texts = [b.generate([GenerationRequest(req.kind, req.messages, req.task, sample=j)])[0].text for j in range(3)]
    assert len(set(texts)) == 3
    again = b.generate([GenerationRequest(req.kind, req.messages, req.task, sample=1)])[0].text
    assert again == texts[1]


def test_top_k_comes_from_the_flag_or_the_model_generation_config(models, tmp_path):
    import shutil

    seen = []

    def spy(b):
        real = b.loaded.model.generate

        def generate(**kw):
            seen.append(kw.get("top_k"))
            return real(**kw)
        b.loaded.model.generate = generate
        return b

    base = dict(name="hf", max_new_tokens=2, temperature=0.8)
    b = spy(get_backend(BackendConfig(model=models["llama"], **base)))
    b.generate(_requests(1))
    assert seen[-1] == 0  # the config sets none: no top-k (transformers alone would use 50)
    folder = tmp_path / "k7"
    shutil.copytree(models["llama"], folder)
    gen = json.loads((folder / "generation_config.json").read_text()) if (folder / "generation_config.json").exists() else {}
    (folder / "generation_config.json").write_text(json.dumps({**gen, "top_k": 7}))
    spy(get_backend(BackendConfig(model=str(folder), **base))).generate(_requests(1))
    assert seen[-1] == 7
    spy(get_backend(BackendConfig(model=str(folder), top_k=3, **base))).generate(_requests(1))
    assert seen[-1] == 3


def test_thinking_opened_by_the_template_and_cut_off_is_never_an_answer(models):
    from tracegen.parsing import parse_code

    b = get_backend(BackendConfig(name="hf", model=models["llama"], max_new_tokens=6))
    tok = b.loaded.tokenizer
    tok.chat_template = tok.chat_template + "{% if add_generation_prompt %}<think>\n{% endif %}"
    c = b.generate(_requests(2)[1:])[0]
    assert c.finish_reason == "length" and c.text.startswith("<think>\n")
    assert parse_code(c.text).status == "truncated_thinking" and parse_code(c.text).value is None


def test_a_run_names_model_loading_and_its_time(models, tmp_path):
    """The first token of a large model can come minutes after the start: the run says it is
    loading the model, and how long that took, before the tracing starts."""
    import re

    from controller.config import RunConfig
    from controller.pipeline import _open_backend

    lines = []
    cfg = RunConfig(root=str(tmp_path), backend=BackendConfig(name="hf", model=models["llama"], cache_dir=None))
    _open_backend(cfg, [], log=lines.append).close()
    assert lines[0] == f"loading model {models['llama']} (hf backend) ..."
    assert re.fullmatch(r"model loaded in \d+\.\ds", lines[1]), lines
