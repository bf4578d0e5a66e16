"""The vllm backend's adapter: optional import, one LLM.chat per wave, per-request seeds.

vLLM itself needs a GPU and is not a test dependency; a minimal module standing in for it
records what the backend asks of vLLM's public API (LLM(...), LLM.chat, SamplingParams) and
answers in vLLM's output shape. The real thing runs in scripts/device/.
"""
import sys
import types
from dataclasses import dataclass

import pytest

from tracegen.backends import BackendConfig, GenerationRequest, Task, get_backend

TASK = Task("c", [["a"]], [["b"]], [["c"]])


@dataclass
class _Gen:
    text: str
    token_ids: list
    finish_reason: str


@dataclass
class _Out:
    prompt_token_ids: list
    outputs: list
    prompt: str = ""


def _fake_vllm(calls):
    mod = types.ModuleType("vllm")

    class SamplingParams:
        # vLLM's SamplingParams: attributes, clone(); ``kw`` shows what the backend changed
        def __init__(self, **kw):
            self.__dict__.update(kw)

        def clone(self):
            return SamplingParams(**self.__dict__)

        @property
        def kw(self):
            return {k: v for k, v in self.__dict__.items() if k not in calls.get("defaults", {})
                    or calls["defaults"][k] != v}

    class LLM:
        def __init__(self, **kw):
            calls["init"] = kw

        def get_default_sampling_params(self):
            # what the model's generation_config.json gives (vLLM reads it for these fields)
            calls["defaults"] = {"top_k": 20, "repetition_penalty": 1.05}
            return SamplingParams(**calls["defaults"])

        def chat(self, conversations, sampling_params, use_tqdm, chat_template_kwargs):
            calls.setdefault("chat", []).append((conversations, sampling_params, chat_template_kwargs))
            prompt = calls.get("prompt", "")
            return [_Out(list(range(3 + i)), [_Gen(f"out{i}", [1] * (i + 1), "length" if i == 1 else "stop")], prompt)
                    for i, _ in enumerate(conversations)]

    mod.SamplingParams, mod.LLM = SamplingParams, LLM
    return mod


def test_missing_vllm_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail
    with pytest.raises(ImportError, match=r"pip install 'live-tool-dagger\[vllm\]'"):
        get_backend(BackendConfig(name="vllm", model="m"))


def test_one_chat_call_per_wave_with_per_request_seeds(monkeypatch):
    calls = {}
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(calls))
    cfg = BackendConfig(name="vllm", model="/models/tiny", seed=10, temperature=0.5, top_p=0.9,
                        max_new_tokens=64, enable_thinking=True, dtype="bfloat16",
                        extra={"max_model_len": 4096})
    b = get_backend(cfg)
    assert calls["init"] == {"model": "/models/tiny", "seed": 10, "gpu_memory_utilization": 0.85,
                             "dtype": "bfloat16", "max_model_len": 4096}
    reqs = [GenerationRequest("direct", [{"role": "user", "content": str(i)}], TASK, sample=i % 2) for i in range(3)]
    out = b.generate(reqs)
    assert len(calls["chat"]) == 1
    convs, params, tmpl = calls["chat"][0]
    assert convs == [r.messages for r in reqs] and tmpl == {"enable_thinking": True}
    assert [p.kw["seed"] for p in params] == [10, 11, 10]
    assert params[0].kw == {"temperature": 0.5, "top_p": 0.9, "max_tokens": 64, "seed": 10}
    assert params[0].top_k == 20 and params[0].repetition_penalty == 1.05  # the model's defaults kept
    assert [(c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason) for c in out] == [
        ("out0", 3, 1, "stop"), ("out1", 4, 2, "length"), ("out2", 5, 3, "stop")]
    assert b.generate([]) == [] and len(calls["chat"]) == 1


def test_needs_a_model():
    with pytest.raises(ValueError, match="--model"):
        get_backend(BackendConfig(name="vllm"))


def test_top_k_template_kwargs_and_engine_options(monkeypatch):
    calls = {}
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(calls))
    cfg = BackendConfig(name="vllm", model="/models/tiny", top_k=5, chat_template_kwargs=False,
                        extra={"language_model_only": True, "enforce_eager": True, "gpu_memory_utilization": 0.5})
    b = get_backend(cfg)
    assert calls["init"]["language_model_only"] is True and calls["init"]["enforce_eager"] is True
    assert calls["init"]["gpu_memory_utilization"] == 0.5
    b.generate([GenerationRequest("direct", [{"role": "user", "content": "x"}], TASK)])
    _, params, tmpl = calls["chat"][0]
    assert params[0].top_k == 5 and tmpl is None


def test_bitsandbytes_is_refused_naming_what_vllm_takes(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm({}))
    with pytest.raises(ValueError, match="AWQ/GPTQ"):
        get_backend(BackendConfig(name="vllm", model="m", load_in_4bit=True))


def test_thinking_opened_in_the_prompt_starts_the_text(monkeypatch):
    from tracegen.parsing import parse_code

    calls = {"prompt": "<|im_start|>assistant\n<think>\n"}
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(calls))
    out = get_backend(BackendConfig(name="vllm", model="m")).generate(
        [GenerationRequest("write", [{"role": "user", "content": "x"}], TASK)] * 2)
    assert out[1].text == "<think>\nout1" and out[1].finish_reason == "length"
    assert parse_code(out[1].text).status == "truncated_thinking"
