"""The deviations section's coder rows come from data: the packaged model's quantization, a model card's
steps against its recipe, and the training completions' lengths against the traces' token limit."""
import json

from controller.report.deviations import deviations_md
from controller.study.coder import coder_provenance

HF = {"name": "hf", "model": "runs/distilled", "max_new_tokens": 384}


def test_the_committed_distilled_card_names_quantization_steps_and_the_cut_completions():
    rows = {r["what"]: r for r in coder_provenance(HF, "results/smollm2_distilled/model_card.json")["rows"]}
    assert "Q4_1" in rows["base weights"]["ran"] and "token embeddings Q8_0" in rows["base weights"]["ran"]
    assert rows["training steps"]["recipe"] == "1 epoch: 69 steps of 8 rows"
    assert rows["training steps"]["ran"].startswith("18 steps (144 of 545 rows, 0.26 epoch)")
    assert "109 of the 545 training completions" in rows["token limit"]["ran"]
    assert "42 of 357 program, 67 of 120 repair" in rows["token limit"]["ran"]


def test_the_limit_is_the_traces_own_and_a_packaged_base_needs_no_card(tmp_path):
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"base": "smollm2", "completion_tokens": {"kinds": {"program": [10, 200, 500]}}}))
    assert "1 of the 3" in coder_provenance(HF, str(card))["rows"][-1]["ran"]
    assert [r["what"] for r in coder_provenance({**HF, "max_new_tokens": 600}, str(card))["rows"]] == ["base weights"]
    base = coder_provenance({"name": "hf", "model": "smollm2", "max_new_tokens": 384})
    assert [r["what"] for r in base["rows"]] == ["base weights"] and base["card"] is None
    assert coder_provenance({"name": "synth", "model": "synth"}) == {}


def test_a_model_folder_sft_wrote_is_its_own_card(tmp_path):
    (tmp_path / "sft_config.json").write_text(json.dumps({"config": {
        "model": "smollm2", "method": "full", "epochs": 1.0, "max_steps": 0, "batch_size": 1, "grad_accum": 8}}))
    (tmp_path / "sft_summary.json").write_text(json.dumps({"steps": 3, "rows_trained": 80, "max_length": 512}))
    rows = coder_provenance({"name": "hf", "model": str(tmp_path), "max_new_tokens": 384})["rows"]
    assert [r["what"] for r in rows] == ["base weights", "training steps"]
    assert rows[1]["recipe"] == "1 epoch: 10 steps of 8 rows" and rows[1]["ran"].startswith("3 steps (24 of 80 rows")


def test_the_report_shows_the_coder_rows_in_its_deviations_section():
    d = {"study_file": "studies/x.toml", "registration_commit": "abc1234", "analysis_head": "def5678",
         "coder": coder_provenance(HF, "results/smollm2_distilled/model_card.json")}
    text = "\n".join(deviations_md({"deviations": d, "study": {"traces_started_utc": "2026-12-02T15:54:06+00:00"}}))
    assert "The coder, `runs/distilled` (its card: `results/smollm2_distilled/model_card.json`)" in text
    assert "| training steps | 1 epoch: 69 steps of 8 rows | 18 steps" in text
