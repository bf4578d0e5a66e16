"""The command line derived from the config dataclasses (controller/args.py): every field with
help is a flag, old flag names keep working, bad values are one line naming the flag (exit 2),
repeated list flags append, and --config FILE sets any flag with the command line winning."""
import dataclasses

import pytest

from controller import cli
from controller.args import build, flags, values

from e2e_helpers import small_case_dir


def parse(*argv):
    return cli.build_config(cli.make_parser().parse_args(list(argv)))


def refused(capsys, tmp_path, *argv):
    try:
        code = cli.main(["--root", str(tmp_path / "root"), "--no-progress", *argv])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and err.startswith("error: "), err
    assert not (tmp_path / "root" / "reports").exists()  # nothing written
    return err


@pytest.mark.parametrize("argv, needles", [
    (["--max-repairs", "abc"], ["--max-repairs", "integer", "'abc'"]),
    (["--max-repairs", "-1"], ["--max-repairs", ">= 0"]),
    (["--lora-frontier", "0,abc"], ["--lora-frontier", "'abc'"]),
    (["--lora-frontier", "0,-1"], ["--lora-frontier", ">= 0"]),
    (["--temperature", "-1"], ["--temperature", ">= 0"]),
    (["--temperature", "warm"], ["--temperature", "number"]),
    (["--top-p", "0"], ["--top-p"]),
    (["--top-k", "-2"], ["--top-k"]),
    (["--workers", "0"], ["--workers", "> 0"]),
    (["--exec-timeout", "0"], ["--exec-timeout"]),
    (["--wave-size", "0"], ["--wave-size"]),
    (["--limit-total", "0"], ["--limit-total"]),
    (["--seeds", "0"], ["--seeds"]),
    (["--dagger-beta", "2"], ["--dagger-beta"]),
    (["--cv-folds", "1"], ["--cv-folds", "2 folds"]),
    (["--split-seeds", "2"], ["--split-seeds", "--cv-folds"]),
    (["--cost", "dollars"], ["--cost", "dollars"]),
    (["--policies", "clairvoyant"], ["--policies", "clairvoyant"]),
    (["--max-steps", "0"], ["--max-steps", ">= 1"]),
    (["--batch-size", "0"], ["--batch-size", ">= 1"]),
    (["--distributed-executor-backend", "slurm"], ["--distributed-executor-backend", "slurm"]),
    (["--backend", "hf", "--model", "m", "--gen-batch-size", "0"], ["--gen-batch-size", ">= 1"]),
    (["--backend", "hf", "--model", "m", "--tensor-parallel-size", "2"], ["--tensor-parallel-size", "--backend vllm"]),
    (["--backend", "vllm", "--model", "m", "--load-in-4bit"], ["--load-in-4bit", "--model"]),
    (["--backend", "hf", "--model", "m", "--program-samples", "3"], ["--program-samples 3", "--temperature"]),
    (["--backend", "openai", "--model", "m", "--base-url", "ftp://x"], ["--base-url", "ftp://x"]),
    (["--endpoint-cooldown", "0"], ["--endpoint-cooldown", "> 0"]),
    (["--resume"], ["--resume", "--generate-traces"]),
    (["--sft-max-tokens", "-1"], ["--sft-max-tokens"]),
])
def test_bad_values_are_one_line_naming_the_flag(capsys, tmp_path, argv, needles):
    err = refused(capsys, tmp_path, *([] if argv == ["--resume"] else ["--generate-traces"]), *argv)
    for n in needles:
        assert n in err, err
    assert "_" not in err.split(":")[1], err  # flags, not field names


def test_backends_that_need_a_setting_name_its_flag(capsys, tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    err = refused(capsys, tmp_path, "--cases", str(cases), "--generate-traces", "--backend", "replay")
    assert "--replay:" in err and "replay-path" not in err
    err = refused(capsys, tmp_path, "--cases", str(cases), "--generate-traces", "--backend", "hf")
    assert "--model:" in err


def test_every_old_flag_keeps_its_name_and_field():
    cfg = parse("--gen-batch-size", "3", "--batch-size", "5", "--replay", "t.jsonl", "--request-timeout", "9",
                "--synth-time-budget", "2", "--exec-timeout", "0.5", "--policy-model", "p", "--lora-frontier",
                "0,0.5", "--no-chat-template-kwargs", "--seed", "7", "--split-seed", "4", "--no-progress")
    b, e = cfg.backend, cfg.experiment
    assert (b.batch_size, e.lora.batch_size, b.replay_path, b.request_timeout_s, b.synth_time_budget_s) == (
        3, 5, "t.jsonl", 9.0, 2.0)
    assert cfg.rollout.exec_timeout_s == 0.5 and e.lora.base_model == "p" and e.lora_frontier_lambdas == (0.0, 0.5)
    assert not b.chat_template_kwargs and (b.seed, e.seed) == (7, 7) and cfg.split_seed == 4 and not cfg.progress
    run = cfg.resolved()  # what a run derives: the folds' split seed, progress off in every stage
    assert run.experiment.split_seed == 4 and not run.rollout.progress and not run.experiment.progress


def test_every_field_with_help_is_a_flag_and_a_new_field_appears_by_itself():
    from controller.pipeline import RunConfig

    table = flags(RunConfig)
    paths = {p for f in table.values() for p in f.paths}
    assert {"backend.batch_size", "experiment.lora.batch_size", "rollout.max_repairs", "experiment.cost",
            "backend.extra.max_model_len", "experiment.split_seeds"} <= paths
    assert "rollout.request_slice" not in paths and "experiment.lora.cache_dir" not in paths

    @dataclasses.dataclass
    class Toy:
        shiny: int = dataclasses.field(default=3, metadata={"help": "a field someone just added"})
        inner: RunConfig = dataclasses.field(default_factory=RunConfig)

    toy = flags(Toy)
    assert toy["--shiny"].paths == ["shiny"] and "--max-repairs" in toy
    p = cli.make_parser()
    assert build(Toy, {"shiny": 5}).shiny == 5 and p.get_default("max_repairs") == 2


def test_repeated_list_flags_append():
    cfg = parse("--backend", "openai", "--model", "m", "--base-url", "http://a:1/v1", "--base-url", "http://b:2/v1",
                "--policies", "direct_only", "--policies", "always_tool_visible,oracle_seq",
                "--lora-frontier", "0", "--lora-frontier", "0.5")
    assert cfg.backend.base_url == "http://a:1/v1,http://b:2/v1"
    assert cfg.experiment.policies == ("direct_only", "always_tool_visible", "oracle_seq")
    assert cfg.experiment.lora_frontier_lambdas == (0.0, 0.5)
    assert parse("--lora-frontier", "none").experiment.lora_frontier_lambdas == ()


def test_config_file_sets_flags_and_the_command_line_wins(tmp_path):
    f = tmp_path / "run.toml"
    f.write_text('max_repairs = 1\ncases = "library"\nbase-url = ["http://a:1/v1", "http://b:2/v1"]\n'
                 'lora_frontier = [0, 0.5]\nno_progress = true\ntemperature = 1\ntrain_lora = true\n')
    cfg = parse("--config", str(f))
    assert (cfg.rollout.max_repairs, cfg.cases, cfg.backend.temperature) == (1, "library", 1.0)
    assert cfg.backend.base_url == "http://a:1/v1,http://b:2/v1" and cfg.experiment.lora_frontier_lambdas == (0.0, 0.5)
    assert not cfg.progress and cfg.experiment.train_lora
    cfg = parse("--config", str(f), "--max-repairs", "3", "--lora-frontier", "1", "--base-url", "http://c:3/v1")
    assert cfg.rollout.max_repairs == 3 and cfg.experiment.lora_frontier_lambdas == (1.0,)
    assert cfg.backend.base_url == "http://c:3/v1"


@pytest.mark.parametrize("text, needles", [
    ("max_repair = 1\n", ["unknown key 'max_repair'"]),
    ("[rollout]\nmax_repair = 1\n", ["unknown key 'rollout.max_repair'"]),
    ("[rollouts]\nmax_repairs = 1\n", ["unknown key 'rollouts'"]),
    ("max_repairs = 'abc'\n", ["max_repairs", "'abc'"]),
    ("train_lora = 1\n", ["train_lora", "bool"]),
    ("max_repairs = \n", ["cannot read it as TOML"]),
])
def test_bad_config_files_are_one_line_naming_file_and_key(capsys, tmp_path, text, needles):
    f = tmp_path / "run.toml"
    f.write_text(text)
    err = refused(capsys, tmp_path, "--config", str(f))
    assert f"--config {f}" in err
    for n in needles:
        assert n in err, err


def test_values_of_a_parsed_command_are_field_paths():
    table = flags(__import__("controller.pipeline", fromlist=["RunConfig"]).RunConfig)
    vals = values(table, cli.make_parser().parse_args(["--max-model-len", "8192", "--enforce-eager"]))
    assert vals["backend.extra"] == {"max_model_len": 8192, "enforce_eager": True}
    assert vals["rollout.max_repairs"] == 2


def test_the_command_itself_refuses_an_unknown_key_of_its_config_file(run_cli, tmp_path):
    f = tmp_path / "run.toml"
    f.write_text("max_repairs = 1\nmax_repair = 2\n")
    r = run_cli("--root", tmp_path / "root", "--config", f, "--generate-traces")
    assert r.returncode == 2 and r.stderr.strip() == (
        f"error: --config {f}: unknown key 'max_repair' (keys are field paths, e.g. max_repairs under [rollout], "
        "or flag names without the dashes)")
    assert not (tmp_path / "root").exists()
    help_text = run_cli("--help").stdout
    assert "--config FILE" in help_text and "--gen-batch-size GEN_BATCH_SIZE" in help_text


def help_entries(text: str) -> dict[str, str]:
    """``--flag`` -> its whole entry in ``--help`` (the wrapped lines joined)."""
    import re

    out, current = {}, None
    for line in text.splitlines():
        m = re.match(r"  (?:-\w, )?(--[\w-]+)", line)
        if m:
            current = m.group(1)
            out[current] = line
        elif current and line.startswith("    "):
            out[current] += " " + line.strip()
        else:
            current = None
    return out


def test_help_shows_every_flags_default(capsys):
    """README: every flag shows its default; a switch says off, a None default what happens unset."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    entries = help_entries(capsys.readouterr().out)
    assert len(entries) > 60 and {"--max-repairs", "--no-progress", "--enforce-eager", "--tag"} <= set(entries)
    missing = [" ".join(e.split()) for flag, e in entries.items()
               if flag not in ("--help", "--version") and "default" not in e.lower()]
    assert not missing, "\n".join(missing)
    assert "(default: 0)" in entries["--split-seed"] and "(default: off)" in entries["--generate-traces"]
