"""The LoRA worker (a side process) trains and scores exactly as a training in the caller does,
and its errors reach the caller."""

import os

import pytest

from controller.learn.lora import LoraPolicyConfig, PolicyExample, train_lora_policy
from controller.learn.lora_worker import LoraWorker

pytest.importorskip("torch")
pytest.importorskip("peft")

VALID = ("DIRECT", "FIX", "PROGRAM")


def _examples(n):
    return [PolicyExample(f"pass={'yes' if i % 3 else 'no'}\nround {i % 4}", VALID, "PROGRAM" if i % 3 else "FIX",
                          1.0 + (i % 5) / 10) for i in range(n)]


def test_worker_matches_a_training_in_the_caller_and_raises_its_errors(tmp_path):
    cfg = LoraPolicyConfig(cache_dir=str(tmp_path / "base"), max_steps=6, batch_size=8, eval_every=3)
    train, dev = _examples(40), _examples(12)[::-1]
    prompts, valid = [e.prompt for e in dev], [e.valid_actions[:2 + i % 2] for i, e in enumerate(dev)]
    here = train_lora_policy(train, cfg, str(tmp_path / "here"), progress=False, dev_examples=dev)
    seen = []
    with LoraWorker(while_waiting=lambda: seen.append("waited")) as worker:
        bad = worker.train([PolicyExample("x", ("DIRECT",), "DIRECT")], cfg, str(tmp_path / "bad"), progress=False)
        there = worker.train(train, cfg, str(tmp_path / "there"), progress=False, dev_examples=dev,
                             on_trained=seen.append)
        assert there.choose(prompts, valid) == here.choose(prompts, valid)  # waits for both trainings
        with pytest.raises(ValueError, match="no trainable examples"):
            bad.meta
        with pytest.raises(ValueError):  # the error stays with its policy
            bad.choose(prompts, valid)
        assert there.meta["steps"] == here.meta["steps"] and there.meta["early_stopping"] == here.meta["early_stopping"]
        assert seen == ["waited", there.meta]  # the wait ran once, the callback with the result
        pid = worker._proc.pid
    with open(tmp_path / "here" / "adapter_model.safetensors", "rb") as a, \
            open(tmp_path / "there" / "adapter_model.safetensors", "rb") as b:
        assert a.read() == b.read()
    with pytest.raises(ProcessLookupError):  # closed: the process is gone
        os.kill(pid, 0)


def test_a_niced_worker_imports_nicer_and_trains_at_the_callers_priority(tmp_path):
    import time

    cfg = LoraPolicyConfig(cache_dir=str(tmp_path / "base"), max_steps=2, batch_size=8, eval_every=2)
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    with LoraWorker(nice=5) as worker:
        pid, seen, deadline = worker._proc.pid, set(), time.monotonic() + 30
        while ours + 5 not in seen and time.monotonic() < deadline:  # the imports take seconds
            seen.add(os.getpriority(os.PRIO_PROCESS, pid))
            time.sleep(0.01)
        assert ours + 5 in seen
        worker.train(_examples(16), cfg, str(tmp_path / "out"), progress=False).meta  # imported and trained
        after = os.getpriority(os.PRIO_PROCESS, pid)
        # back where it started, unless the system refuses an unprivileged process that
        assert after == ours or (os.geteuid() != 0 and after == ours + 5)


def test_the_workers_library_warnings_join_the_callers_summary(tmp_path, capfd, monkeypatch):
    """With the caller's warnings held back (the CLI's default), the worker holds its own back too
    (a training warns through transformers) and its counts reach the caller's summary line."""
    from tracegen import held_warnings

    monkeypatch.setattr(held_warnings, "ACTIVE", None)
    monkeypatch.setattr("warnings.showwarning", __import__("warnings").showwarning)
    summary = held_warnings.hold()
    cfg = LoraPolicyConfig(cache_dir=str(tmp_path / "base"), max_steps=2, batch_size=8, eval_every=2)
    with LoraWorker() as worker:
        worker.train(_examples(16), cfg, str(tmp_path / "out"), progress=False).meta
    err = capfd.readouterr().err
    assert "Warning" not in err, err
    assert summary.counts.get("transformers", 0) >= 1, summary.counts
    assert "from libraries held back (transformers" in summary.line()


def test_a_policy_the_caller_lets_go_of_is_freed_in_the_worker(tmp_path):
    """The worker used to keep every model it trained (a pretrained base: ~0.6 GB a training)."""
    import gc

    cfg = LoraPolicyConfig(cache_dir=str(tmp_path / "base"), max_steps=2, batch_size=8, eval_every=0)
    train = _examples(16)
    prompts, valid = [e.prompt for e in train[:4]], [e.valid_actions for e in train[:4]]
    with LoraWorker() as worker:
        pols = [worker.train(train, cfg, str(tmp_path / f"p{i}"), progress=False) for i in range(3)]
        kept = pols[1]
        answer = kept.choose(prompts, valid)
        assert worker.held() == 3
        del pols
        gc.collect()
        assert worker.held() == 1  # the drops went ahead of this request, in order
        assert kept.choose(prompts, valid) == answer  # the one still held answers as before
