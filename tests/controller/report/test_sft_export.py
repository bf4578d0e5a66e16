"""SFT export: the exact prompts the model saw, verified answers only, nothing from the test split,
and (checked with TRL's own dataset preparation) no loss on the failed attempts a repair shows."""
import json

import pytest

from cases import Case
from controller.report.sft import describe, export_sft, verified_conversations
from tracegen.conversations import direct_conversation, program_chains, record_task, round_messages
from tracegen.rollout import RolloutConfig, trace_cases

from scripted import ScriptedBackend
from tracefactory import ANSWER, WRONG, make_record

RIGHT = "```python\ndef transform(table):\n    return [[row[0]] for row in table]\n```"
SAME = "```python\ndef transform(table):\n    return table\n```"
CRASH = "```python\ndef transform(table):\n    return table[99]\n```"


# (kind, round, sample) -> answer: sample 0 crashes on the new input, then is right; sample 1 is right
# at once; sample 2 says it cannot, twice, then writes the same wrong program
SCRIPT = {("direct", 0, 0): '```json\n[["Cy"],["Di"],["Ed"]]\n```',
          ("write", 0, 0): SAME, ("fix", 1, 0): CRASH, ("fix", 2, 0): RIGHT,
          ("write", 0, 1): RIGHT, ("write", 0, 2): "I cannot write this.",
          ("fix", 1, 2): "Still nothing.", ("fix", 2, 2): SAME}


def conversation(row: dict) -> list[dict]:
    return row["prompt"] + row["completion"]


def check_trl_conversation(row: dict) -> None:
    """TRL's conversational prompt-completion format: ``prompt`` = system?, then user/assistant
    turns ending with the user's; ``completion`` = the one assistant answer; every message
    exactly ``{"role", "content"}`` with string content."""
    assert [m["role"] for m in row["completion"]] == ["assistant"] and row["prompt"][-1]["role"] == "user"
    assert "messages" not in row  # a messages column would make TRL train on the whole conversation
    msgs = conversation(row)
    assert isinstance(msgs, list) and len(msgs) >= 2
    for m in msgs:
        assert set(m) == {"role", "content"} and isinstance(m["content"], str) and m["content"]
    roles = [m["role"] for m in msgs]
    body = roles[1:] if roles[0] == "system" else roles
    assert body == ["user", "assistant"] * (len(body) // 2), roles
    assert {"case_id", "family", "split", "kind"} <= set(row)


@pytest.fixture(scope="module", params=[False, True], ids=["latest-attempt", "repair-history"])
def traced(request):
    from sandbox import Sandbox

    case = Case.from_tables("fam/fam_1", "fam", [["Ann", "3"], ["Bob", "4"]], [["Ann"], ["Bob"]],
                [["Cy", "5"], ["Di", "6"], ["Ed", "7"]], ANSWER)
    backend = ScriptedBackend(SCRIPT)
    with Sandbox(workers=1) as sb:
        [record] = trace_cases([case], {"fam/fam_1": "train"}, backend, sb,
                               RolloutConfig(max_repairs=2, program_samples=3, progress=False,
                                             repair_history=request.param))
    return record, backend.seen, request.param


def test_rebuilt_prompts_are_the_prompts_the_model_was_sent(traced):
    record, seen, history = traced
    task = record_task(record)
    assert direct_conversation(record)[:-1] == seen[("direct", 0, 0)]
    chains = program_chains(record)
    assert [len(c) for c, _ in chains] == [3, 1, 3]  # every sample is repaired while failing
    for j, (chain, _) in enumerate(chains):
        for i, rnd in enumerate(chain):
            assert round_messages(task, chain, i, history) == seen[(rnd["kind"], i, j)], (j, i)
    # with the history, the second repair prompt also shows the first attempt
    assert (len(seen[("fix", 2, 0)]) > len(seen[("fix", 1, 0)]) + 1) == history
    # the second repair prompt shows the crash of round 1, not the wrong output of round 0
    assert "error: exception" in seen[("fix", 2, 0)][-1]["content"]


def test_verified_trajectories_of_a_traced_record(traced):
    record, seen, history = traced
    rows = {(r["kind"], r["sample"], r["round"]): r for r in verified_conversations(record, history)}
    assert set(rows) == {("direct", None, None), ("repair", 0, 2), ("program", 1, 0)}
    repair = conversation(rows[("repair", 0, 2)])
    assert repair[:-1] == seen[("fix", 2, 0)]
    turns = ["system", "user"] + ["assistant", "user"] * (2 if history else 1) + ["assistant"]
    assert [m["role"] for m in repair] == turns
    assert repair[-1]["content"] == RIGHT  # the stored raw answer
    assert rows[("program", 1, 0)]["completion"] == [{"role": "assistant", "content": RIGHT}]
    # the length is the backend's count for that round: its prompt plus its answer
    assert rows[("repair", 0, 2)]["tokens"] == 20
    for r in rows.values():
        check_trl_conversation(r)


def _v2(record, samples):
    """Turn tracefactory's record into trace schema v2's sample layout."""
    record = dict(record, schema_version=2)
    record["samples"] = [s["rounds"] for s in samples]
    record["hidden"] = dict(record["hidden"], samples=[s["hidden"]["rounds"] for s in samples])
    return record


def test_export_keeps_train_and_dev_only_and_no_test_family(tmp_path):
    recs = [
        make_record("a/a_1", "a", "train", direct=ANSWER),  # direct right
        make_record("a/a_2", "a", "train", rounds=[(False, None), (True, ANSWER)]),  # repaired
        make_record("a/a_3", "a", "train", rounds=[(True, WRONG)]),  # overfit: not verified
        make_record("b/b_1", "b", "dev", rounds=[(True, ANSWER)]),
        make_record("t/t_1", "t", "test", direct=ANSWER, rounds=[(True, ANSWER)]),
        make_record("u/u_1", "u", "unassigned", direct=ANSWER),
        make_record("t/t_2", "t", "train", direct=ANSWER),  # mislabelled case of a test family
        _v2(make_record("c/c_1", "c", "train", rounds=[(False, None)]),
            [make_record(rounds=[(False, None), (True, ANSWER)])]),
    ]
    counts = export_sft(recs, tmp_path / "sft")
    train = [json.loads(l) for l in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    dev = [json.loads(l) for l in (tmp_path / "sft" / "dev.jsonl").read_text().splitlines()]
    assert (counts["train"], counts["dev"], counts["too_long"]) == (len(train), len(dev), 0)
    assert sorted((r["case_id"], r["kind"], r["sample"], r["round"]) for r in train) == [
        ("a/a_1", "direct", None, None), ("a/a_2", "repair", 0, 1), ("c/c_1", "repair", 1, 1)]
    assert [(r["case_id"], r["kind"]) for r in dev] == [("b/b_1", "program")]
    rows = train + dev
    assert not {r["family"] for r in rows} & {"t", "u"}
    assert all(r["split"] in ("train", "dev") for r in rows)
    for r in rows:
        check_trl_conversation(r)
    # a repair trajectory carries the failed code and the feedback on it before the final answer
    rep = conversation(next(r for r in train if r["case_id"] == "a/a_2"))
    assert "return table  # 0" in rep[2]["content"] and "differs from the example output" in rep[3]["content"]
    assert rep[4]["content"] == recs[1]["rounds"][1]["raw"]


def test_export_is_read_by_trl_as_conversational(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    trl_data = pytest.importorskip("trl.data_utils")
    datasets = pytest.importorskip("datasets")
    recs = [make_record("a/a_1", "a", "train", direct=ANSWER),
            make_record("a/a_2", "a", "train", rounds=[(False, None), (True, ANSWER)]),
            make_record("b/b_1", "b", "dev", rounds=[(True, ANSWER)])]
    export_sft(recs, tmp_path)
    ds = datasets.load_dataset("json", data_files={s: str(tmp_path / f"{s}.jsonl") for s in ("train", "dev")},
                              cache_dir=str(tmp_path / "cache"))
    assert (len(ds["train"]), len(ds["dev"])) == (2, 1)
    for split in ("train", "dev"):
        for ex in ds[split]:
            assert trl_data.is_conversational(ex)


def test_max_tokens_leaves_out_longer_rows_and_counts_them(tmp_path):
    recs = [make_record("a/a_1", "a", "train", rounds=[(True, ANSWER)], round_tokens=20),  # 100 + 20
            make_record("a/a_2", "a", "train", rounds=[(False, None), (True, ANSWER)], round_tokens=400),
            make_record("b/b_1", "b", "dev", direct=ANSWER, direct_tokens=500),  # 80 + 500
            make_record("b/b_2", "b", "dev", rounds=[(True, ANSWER)], round_tokens=21)]
    counts = export_sft(recs, tmp_path, max_tokens=120)
    assert (counts["train"], counts["dev"], counts["too_long"]) == (1, 0, 3)
    assert (counts["max_tokens"], counts["chosen"], counts["longest"]) == (120, "given", 580)
    assert {k: (v["kept"], v["too_long"]) for k, v in counts["kinds"].items()} == {
        "direct": (0, 1), "program": (1, 1), "repair": (0, 1)}
    [row] = [json.loads(l) for l in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert (row["case_id"], row["tokens"]) == ("a/a_1", 120)  # the limit itself is kept
    assert (tmp_path / "dev.jsonl").read_text() == ""
    assert json.loads((tmp_path / "export.json").read_text()) == counts
    assert describe(counts).endswith("3 left out for more than 120 tokens (1 of 1 direct, 1 of 2 program, 1 of 1 "
                                     "repair; the longest has 580; --sft-max-tokens auto keeps them all)")
    assert export_sft(recs, tmp_path)["too_long"] == 0  # None: auto, nothing left out


def test_default_length_keeps_the_long_repair_conversations(tmp_path):
    """The user report: every repair row was over TRL's 1024 default. ``auto`` keeps them all and
    chooses the length to train with from the longest row; an explicit limit's report is per kind."""
    recs = [make_record("a/a_1", "a", "train", direct=ANSWER, direct_tokens=300),  # 80 + 300
            make_record("a/a_2", "a", "train", rounds=[(True, ANSWER)], round_tokens=700),  # 100 + 700
            make_record("b/b_1", "b", "dev", rounds=[(True, ANSWER)], round_tokens=950)]  # 1050
    # three repair conversations, each longer than 1024 (the failed program sits in the prompt)
    recs += [make_record(f"c/c_{i}", "c", "train", rounds=[(False, None)] * i + [(True, ANSWER)],
                         round_tokens=1000 + 500 * i, max_repairs=3) for i in (1, 2, 3)]  # 1600, 2100, 2600
    recs += [make_record("t/t_1", "t", "test", rounds=[(False, None), (True, ANSWER)], round_tokens=9000)]
    counts = export_sft(recs, tmp_path / "sft")
    assert (counts["train"], counts["dev"], counts["too_long"]) == (5, 1, 0)
    assert (counts["max_tokens"], counts["chosen"], counts["longest"]) == (2816, "auto", 2600)  # 11 x 256
    assert {k: (v["kept"], v["too_long"]) for k, v in counts["kinds"].items()} == {
        "direct": (1, 0), "program": (2, 0), "repair": (3, 0)}
    assert counts["kinds"]["repair"]["lengths"] == {"n": 3, "min": 1600, "median": 2100, "max": 2600}
    train = [json.loads(l) for l in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    assert sorted(r["tokens"] for r in train if r["kind"] == "repair") == [1600, 2100, 2600]
    assert json.loads((tmp_path / "sft" / "export.json").read_text()) == counts
    assert "none left out: train with max_length=2816" in describe(counts)
    assert "(1 direct, 2 program, 3 repair)" in describe(counts)
    # TRL's old default drops every repair row and one program row, and says so per kind
    old = export_sft(recs, tmp_path / "old", max_tokens=1024)
    assert (old["train"], old["dev"], old["too_long"]) == (2, 0, 4)
    assert {k: v["too_long"] for k, v in old["kinds"].items()} == {"direct": 0, "program": 1, "repair": 3}
    assert "4 left out for more than 1024 tokens (1 of 2 program, 3 of 3 repair;" in describe(old)
    assert json.loads((tmp_path / "old" / "export.json").read_text())["kinds"]["repair"]["too_long"] == 3


def test_sft_max_tokens_flag_takes_auto_or_an_integer():
    from controller.cli import build_config, make_parser

    def parsed(*argv):
        return build_config(make_parser().parse_args(list(argv))).sft_max_tokens

    assert parsed() == 0 and parsed("--sft-max-tokens", "auto") == 0 and parsed("--sft-max-tokens", "AUTO") == 0
    assert parsed("--sft-max-tokens", "2048") == 2048


@pytest.fixture(scope="module")
def tiny_sft(tiny_model):
    """A tiny chat model (Qwen-style template, no ``{% generation %}`` markers) for TRL."""
    pytest.importorskip("trl")
    return tiny_model


def _trl_labelled(tmp_path, model_dir, rows: list[dict]) -> list[tuple[str, str]]:
    """Run TRL's SFTTrainer dataset preparation and collator on ``rows``; per row, the whole
    decoded sequence and the decoded tokens that carry a loss (label != -100)."""
    import datasets
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache"))
    tok = AutoTokenizer.from_pretrained(model_dir)
    args = trl.SFTConfig(output_dir=str(tmp_path / "out"), report_to="none", use_cpu=True, bf16=False,
                         max_length=4096)  # defaults otherwise: the loss masking is TRL's own
    trainer = trl.SFTTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir), args=args,
                             train_dataset=ds, processing_class=tok)
    out = []
    for i in range(len(ds)):
        batch = trainer.data_collator([trainer.train_dataset[i]])
        ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
        out.append((tok.decode(ids), tok.decode([t for t, l in zip(ids, labels) if l != -100])))
    return out


def test_trl_gives_the_failed_attempt_no_loss(tmp_path, tiny_sft, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    rec = make_record("a/a_2", "a", "train", rounds=[(False, None), (True, ANSWER)])
    export_sft([rec], tmp_path / "sft")
    [row] = [json.loads(l) for l in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    failed, final = row["prompt"][2]["content"], rec["rounds"][1]["raw"]  # the failed attempt's turn
    assert row["prompt"][2]["role"] == "assistant" and "return table  # 0" in failed and failed != final
    [(whole, trained)] = _trl_labelled(tmp_path, tiny_sft, [row])
    assert failed.strip() in whole and final.strip() in whole  # the failed program is context ...
    assert failed.strip() not in trained  # ... and no target
    assert final.strip() in trained and "differs from the example output" not in trained
    # control: the same conversation as one ``messages`` list is trained end to end under TRL's
    # defaults, failed program included (what the export used to write)
    [(_, trained_all)] = _trl_labelled(tmp_path / "control", tiny_sft, [{"messages": conversation(row)}])
    assert failed.strip() in trained_all
