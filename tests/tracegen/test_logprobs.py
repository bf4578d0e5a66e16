"""Token log-probabilities in the trace: the hf backend records them per generation, and they match
an independent recomputation (a greedy decode by plain forward passes); replay keeps them; synth
records none (the key is absent, never a zero); the openai backend reads them from a server and
says when it gets none."""
import json
import math
import subprocess
import sys

import pytest

from e2e_helpers import CLI, small_case_dir
from tracegen.backends.logprobs import logprob_stats, recorded

pytest.importorskip("transformers")


def cli(*args):
    return subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def noisy_model(tmp_path_factory):
    """The tiny llama with noise on its weights, so greedy outputs depend on the prompt."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tracegen.tiny_model import build_tiny_model

    root = tmp_path_factory.mktemp("lp_tiny")
    src = build_tiny_model(str(root / "llama"), arch="llama")
    model = AutoModelForCausalLM.from_pretrained(src)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.add_(torch.randn(p.shape, generator=gen) * (0.3 if "embed" not in name else 1.0))
    model.save_pretrained(root / "noisy")
    AutoTokenizer.from_pretrained(src).save_pretrained(root / "noisy")
    return str(root / "noisy")


def _greedy_by_forward_passes(model_dir: str, messages: list, max_new: int):
    """Token log-probabilities of a greedy decode recomputed the plain way: one full forward pass
    per token over the prompt and the tokens so far (no cache, no batch, no padding)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tracegen.backends._tokens import render_chat, stop_token_ids

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    stops = set(stop_token_ids(tok, model))
    ids = tok(render_chat(tok, messages, False), add_special_tokens=False, return_tensors="pt").input_ids
    out = []
    with torch.no_grad():
        for _ in range(max_new):
            lp = torch.log_softmax(model(ids).logits[0, -1].float(), dim=-1)
            nxt = int(lp.argmax())
            if nxt in stops:
                break
            out.append(float(lp[nxt]))
            ids = torch.cat([ids, torch.tensor([[nxt]])], dim=1)
    return out


@pytest.mark.slow
def test_hf_trace_records_logprobs_that_a_forward_pass_recomputes(noisy_model, tmp_path):
    from tracegen.prompts import direct_messages, write_messages
    from tracegen.backends.base import Task

    cases = small_case_dir(tmp_path / "cases", families=3, per_family=1)
    args = ("--cases", str(cases), "--generate-traces", "--backend", "hf", "--model", noisy_model,
            "--max-repairs", "1", "--max-new-tokens", "10", "--gen-batch-size", "3", "--no-progress",
            "--test-families", "1", "--dev-families", "1", "--cache-dir", "none")
    r = cli("--root", str(tmp_path / "a"), *args)
    assert r.returncode == 0, r.stderr[-3000:]
    path = tmp_path / "a" / "reports" / "fresh_traces.jsonl"
    traces = [json.loads(l) for l in path.read_text().splitlines()]
    assert len(traces) == 3 and all(t["schema_version"] == 3 for t in traces)
    for t in traces:
        for part in [t["direct"], *t["rounds"]]:
            lp = part["logprobs"]
            assert lp["source"] == "hf" and lp["tokens"] <= part["completion_tokens"] <= lp["tokens"] + 1
            if lp["tokens"]:
                assert lp["min"] <= lp["mean"] <= 0 and math.isclose(lp["sum"], lp["mean"] * lp["tokens"], abs_tol=1e-4)
        task = Task.from_tables(t["case_id"], t["task"]["input_table"], t["task"]["output_table"], t["task"]["test_table"])
        for part, msgs in ((t["direct"], direct_messages(task)), (t["rounds"][0], write_messages(task))):
            want = logprob_stats(_greedy_by_forward_passes(noisy_model, msgs, 10), "hf")
            got = part["logprobs"]
            assert got["tokens"] == want["tokens"]
            if want["tokens"]:
                assert got["mean"] == pytest.approx(want["mean"], abs=2e-4)
                assert got["min"] == pytest.approx(want["min"], abs=2e-4)
    # replay keeps them as traced
    r = cli("--root", str(tmp_path / "b"), "--cases", str(cases), "--generate-traces", "--backend", "replay",
            "--replay", str(path), "--max-repairs", "1", "--no-progress", "--test-families", "1",
            "--dev-families", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    again = [json.loads(l) for l in (tmp_path / "b" / "reports" / "fresh_traces.jsonl").read_text().splitlines()]
    assert [a["direct"]["logprobs"] for a in again] == [t["direct"]["logprobs"] for t in traces]
    assert [[r["logprobs"] for r in a["rounds"]] for a in again] == [[r["logprobs"] for r in t["rounds"]] for t in traces]


def test_synth_records_none(tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=3, per_family=1)
    r = cli("--root", str(tmp_path), "--cases", str(cases), "--generate-traces", "--max-repairs", "1",
            "--synth-fix-nodes", "2000", "--no-progress", "--test-families", "1", "--dev-families", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    traces = [json.loads(l) for l in (tmp_path / "reports" / "fresh_traces.jsonl").read_text().splitlines()]
    assert traces and all("logprobs" not in p for t in traces for p in [t["direct"], *t["rounds"]])
    assert recorded(traces[0]["direct"]) is None


def test_stats_of_an_empty_answer_are_none_not_zero():
    s = logprob_stats([], "hf")
    assert s["tokens"] == 0 and s["mean"] is None and s["min"] is None
    assert recorded({"logprobs": s}) is None and recorded({}) is None
    assert recorded({"logprobs": {"unavailable": "x", "source": "openai"}}) is None
    s = logprob_stats([-0.5, -1.5], "vllm")
    assert s == {"mean": -1.0, "min": -1.5, "sum": -2.0, "tokens": 2, "source": "vllm"}
