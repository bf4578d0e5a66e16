"""The vllm backend's adapter: optional import, one LLM.chat per wave, per-request seeds.

vLLM itself needs a GPU and is not a test dependency; a minimal module standing in for it
records what the backend asks of vLLM's public API (LLM(...), LLM.chat, SamplingParams) and
answers in vLLM's output shape. The real thing runs in benchmarks/gpu/.
"""
import sys
import types
from dataclasses import dataclass

import pytest

from tracegen.backends import BackendConfig, GenerationRequest, Task, get_backend

TASK = Task.from_tables("c", [["a"]], [["b"]], [["c"]])


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
            outs = [_Out(list(range(3 + i)), [_Gen(f"out{i}", [1] * (i + 1), "length" if i == 1 else "stop")], prompt)
                    for i, _ in enumerate(conversations)]
            if callable(use_tqdm):  # what vLLM's LLM._run_engine does with a tqdm stand-in
                for _ in use_tqdm(conversations, desc="Adding requests"):
                    pass
                bar = use_tqdm(total=len(outs), desc="Processed prompts", dynamic_ncols=True, postfix="")
                for o in outs:
                    speed = len(o.prompt_token_ids) / bar.format_dict["elapsed"]
                    bar.postfix = f"est. speed input: {speed:.2f} toks/s"
                    calls.setdefault("finished_before_return", []).append(o.outputs[0].text)
                    bar.update(len(o.outputs))
                    if bar.n == len(outs):
                        bar.refresh()
                bar.close()
            return outs

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
    assert params[0].kw == {"temperature": 0.5, "top_p": 0.9, "max_tokens": 64, "seed": 10, "logprobs": 0}
    assert params[0].top_k == 20 and params[0].repetition_penalty == 1.05  # the model's defaults kept
    assert [(c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason) for c in out] == [
        ("out0", 3, 1, "stop"), ("out1", 4, 2, "length"), ("out2", 5, 3, "stop")]
    assert b.generate([]) == [] and len(calls["chat"]) == 1


def test_progress_hears_each_request_vllm_finishes(monkeypatch):
    """With ``on_request_done`` set, LLM.chat gets a tqdm stand-in whose ``update`` reports each
    finished request (vLLM calls it as requests end); without it, ``use_tqdm`` stays False."""
    calls = {}
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(calls))
    b = get_backend(BackendConfig(name="vllm", model="m"))
    reqs = [GenerationRequest("direct", [{"role": "user", "content": str(i)}], TASK) for i in range(3)]
    b.generate(reqs)
    assert "finished_before_return" not in calls
    heard = []
    b.on_request_done = lambda n: heard.append((n, list(calls["finished_before_return"])))
    out = b.generate(reqs)
    assert heard == [(1, ["out0"]), (1, ["out0", "out1"]), (1, ["out0", "out1", "out2"])]
    assert [c.text for c in out] == ["out0", "out1", "out2"]


def test_needs_a_model():
    with pytest.raises(ValueError, match="model: the vllm backend needs one"):
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


# ---- parallelism: the settings reach vLLM's own engine arguments ---------------------------------

def _fake_async(calls):
    """``_fake_vllm`` plus vLLM's AsyncEngineArgs / AsyncLLMEngine (what data parallel runs on)."""
    import asyncio

    mod = _fake_vllm(calls)

    class AsyncEngineArgs:
        def __init__(self, **kw):
            self.kw = kw

    class Tokenizer:
        def apply_chat_template(self, messages, tokenize, add_generation_prompt, **kw):
            assert tokenize is False and add_generation_prompt is True
            calls.setdefault("template_kwargs", []).append(kw)
            return "<chat>" + messages[-1]["content"] + ("<think>\n" if kw.get("enable_thinking") else "")

        def encode(self, text, add_special_tokens):
            assert add_special_tokens is False  # the template already holds the special tokens
            return [ord(ch) for ch in text]

    class ModelConfig:
        def get_diff_sampling_param(self):
            return {"top_k": 20}

    class AsyncLLMEngine:
        in_flight = max_in_flight = 0

        @classmethod
        def from_engine_args(cls, args):
            calls["async_init"] = args.kw
            return cls()

        async def get_tokenizer(self):
            return Tokenizer()

        async def get_model_config(self):
            return ModelConfig()

        async def generate(self, prompt, params, request_id):
            cls = type(self)
            cls.in_flight += 1
            cls.max_in_flight = max(cls.max_in_flight, cls.in_flight)
            calls.setdefault("async_requests", []).append((request_id, prompt["prompt_token_ids"], params))
            await asyncio.sleep(0.01)  # the engine works on all of them at once
            text = "".join(map(chr, prompt["prompt_token_ids"]))
            yield _Out(prompt["prompt_token_ids"], [_Gen("partial", [1], None)])
            cls.in_flight -= 1
            yield _Out(prompt["prompt_token_ids"], [_Gen(f"re:{text}", [1, 2], "stop")])

        def shutdown(self):
            calls["shutdown"] = True

    mod.AsyncEngineArgs, mod.AsyncLLMEngine = AsyncEngineArgs, AsyncLLMEngine
    return mod


def test_tensor_pipeline_parallel_and_ray_reach_the_engine(monkeypatch):
    calls = {}
    monkeypatch.setitem(sys.modules, "vllm", _fake_async(calls))
    b = get_backend(BackendConfig(name="vllm", model="/models/tiny", tensor_parallel_size=4, pipeline_parallel_size=2,
                                  distributed_executor_backend="ray", extra={"load_format": "dummy"}))
    assert calls["init"] == {"model": "/models/tiny", "seed": 0, "gpu_memory_utilization": 0.85,
                             "tensor_parallel_size": 4, "pipeline_parallel_size": 2,
                             "distributed_executor_backend": "ray", "load_format": "dummy"}
    assert "async_init" not in calls  # one engine: the offline LLM class, as before
    assert b.generate([GenerationRequest("direct", [{"role": "user", "content": "x"}], TASK)])[0].text == "out0"


def test_defaults_leave_parallelism_to_vllm(monkeypatch):
    calls = {}
    monkeypatch.setitem(sys.modules, "vllm", _fake_async(calls))
    get_backend(BackendConfig(name="vllm", model="/models/tiny"))
    assert not {"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
                "distributed_executor_backend"} & set(calls["init"])


def test_data_parallel_runs_on_vllms_async_engine_with_all_requests_at_once(monkeypatch):
    calls = {}
    mod = _fake_async(calls)
    monkeypatch.setitem(sys.modules, "vllm", mod)
    cfg = BackendConfig(name="vllm", model="/models/tiny", seed=3, temperature=0.6, data_parallel_size=2,
                        tensor_parallel_size=2, distributed_executor_backend="ray", enable_thinking=True,
                        extra={"max_model_len": 2048})
    b = get_backend(cfg)
    assert "init" not in calls  # vLLM refuses LLM(data_parallel_size=k); the async engine runs the replicas
    assert calls["async_init"] == {"model": "/models/tiny", "seed": 3, "gpu_memory_utilization": 0.85,
                                   "max_model_len": 2048, "tensor_parallel_size": 2, "data_parallel_size": 2,
                                   "distributed_executor_backend": "ray", "data_parallel_backend": "ray"}
    reqs = [GenerationRequest("write", [{"role": "user", "content": f"q{i}"}], TASK, sample=i % 3) for i in range(5)]
    out = b.generate(reqs)
    assert mod.AsyncLLMEngine.max_in_flight == 5  # one wave: every request submitted before any finished
    # in request order, with the rendered prompt's open <think> starting the text (as LLM.chat)
    assert [c.text for c in out] == [f"<think>\nre:<chat>q{i}<think>\n" for i in range(5)]
    assert [(c.prompt_tokens, c.completion_tokens, c.finish_reason) for c in out] == [(len(f"<chat>q{i}<think>\n"), 2, "stop") for i in range(5)]
    assert calls["template_kwargs"] == [{"enable_thinking": True}] * 5
    ids = [r for r, _, _ in calls["async_requests"]]
    assert len(set(ids)) == 5
    params = [p for _, _, p in calls["async_requests"]]
    assert sorted(p.seed for p in params) == sorted(3 + i % 3 for i in range(5))
    assert all(p.temperature == 0.6 and p.top_k == 20 for p in params)  # the model's defaults kept
    b.generate(reqs[:2])
    assert len({r for r, _, _ in calls["async_requests"]}) == 7  # request ids never repeat across waves
    b.close()
    assert calls["shutdown"] is True


def test_cli_flags_reach_the_engine_and_the_cache_key(monkeypatch, tmp_path):
    from controller import cli
    from tracegen.backends.cache import CachedBackend

    calls = {}
    monkeypatch.setitem(sys.modules, "vllm", _fake_async(calls))

    def config(*flags):
        return cli.build_config(cli.make_parser().parse_args(["--backend", "vllm", "--model", "/models/tiny", *flags])).backend

    cfg = config("--tensor-parallel-size", "2", "--pipeline-parallel-size", "3", "--data-parallel-size", "4",
                 "--distributed-executor-backend", "mp", "--load-format", "dummy")
    get_backend(cfg)
    assert {k: calls["async_init"][k] for k in ("tensor_parallel_size", "pipeline_parallel_size",
                                                "data_parallel_size", "distributed_executor_backend",
                                                "load_format")} == {
        "tensor_parallel_size": 2, "pipeline_parallel_size": 3, "data_parallel_size": 4,
        "distributed_executor_backend": "mp", "load_format": "dummy"}

    req = GenerationRequest("direct", [{"role": "user", "content": "x"}], TASK)

    def key(*flags):
        return CachedBackend(get_backend(config(*flags)), str(tmp_path)).key(req)

    k = key()
    assert key("--data-parallel-size", "2") == k  # a replica is the same engine; seeds are per request
    assert key("--distributed-executor-backend", "ray") == k
    assert key("--tensor-parallel-size", "2") != k  # sharded sums: other floating point
    assert key("--pipeline-parallel-size", "2") != k
    assert key("--tensor-parallel-size", "2") != key("--pipeline-parallel-size", "2")


def test_run_config_records_the_parallel_settings(monkeypatch, tmp_path):
    import json

    from controller import cli
    from controller.pipeline import run

    from e2e_helpers import small_case_dir

    calls = {}
    monkeypatch.setitem(sys.modules, "vllm", _fake_async(calls))
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    args = cli.make_parser().parse_args([
        "--root", str(tmp_path / "run"), "--cases", str(cases), "--generate-traces", "--backend", "vllm",
        "--model", "/models/tiny", "--tensor-parallel-size", "2", "--data-parallel-size", "2",
        "--distributed-executor-backend", "ray", "--max-repairs", "0", "--no-progress", "--lora-frontier", "none",
        "--test-families", "1", "--dev-families", "1"])
    summary = run(cli.build_config(args), log=lambda *a: None)
    saved = json.loads((tmp_path / "run" / "reports" / "run_config.json").read_text())["config"]["backend"]
    assert (saved["tensor_parallel_size"], saved["data_parallel_size"], saved["distributed_executor_backend"]) == (2, 2, "ray")
    assert summary["config"]["backend"]["pipeline_parallel_size"] == 1
    assert calls["async_init"]["data_parallel_size"] == 2 and calls["shutdown"] is True
    assert summary["timing"]["generation"]["cache_misses"] == 8  # 4 direct + 4 write, all on the engine


@pytest.mark.parametrize("flags, message", [
    (["--backend", "hf", "--tensor-parallel-size", "2"], "--tensor-parallel-size: only --backend vllm"),
    (["--backend", "openai", "--data-parallel-size", "2"], "--data-parallel-size: only --backend vllm"),
    (["--backend", "vllm", "--pipeline-parallel-size", "0"], "--pipeline-parallel-size: must be >= 1"),
    (["--backend", "hf", "--distributed-executor-backend", "ray"], "--distributed-executor-backend: only"),
])
def test_parallel_flags_that_cannot_work_are_refused(flags, message):
    from controller import cli
    from controller.pipeline import UsageError, check_flags

    with pytest.raises(UsageError, match=message):
        check_flags(cli.build_config(cli.make_parser().parse_args(["--model", "m", *flags])))


def test_data_parallel_reports_each_request_as_its_final_output_arrives(monkeypatch):
    calls = {}
    mod = _fake_async(calls)
    monkeypatch.setitem(sys.modules, "vllm", mod)
    b = get_backend(BackendConfig(name="vllm", model="/models/tiny", data_parallel_size=2))
    heard = []
    b.on_request_done = lambda n: heard.append((n, mod.AsyncLLMEngine.in_flight))
    b.generate([GenerationRequest("direct", [{"role": "user", "content": f"q{i}"}], TASK) for i in range(4)])
    # one report per request, each while the others were still in the engine (the last one alone)
    assert [n for n, _ in heard] == [1, 1, 1, 1] and heard[0][1] == 3 and heard[-1][1] == 0
    b.close()
