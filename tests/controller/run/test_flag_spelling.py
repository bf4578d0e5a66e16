"""A flag is taken only as spelled in full (argparse's prefix matching would read `--max-repair 0`
as `--max-repairs 0`: a config that means something else than it says), on the run and on every
subcommand; and `--help` shows the subcommands before the flags."""
import pytest

from controller import cli


@pytest.mark.parametrize("argv,abbreviated", [
    (["--generate-trace", "--max-repairs", "0"], "--generate-trace"),
    (["--generate-traces", "--max-repair", "0"], "--max-repair"),
    (["compare", "a", "b", "--ou", "x"], "--ou"),
    (["view", ".", "--ope"], "--ope"),
    (["sft", "--dat", "x.jsonl"], "--dat"),
    (["import", "x.jsonl", "--roo", "r"], "--roo"),
    (["export", "--roo", "r", "x.jsonl"], "--roo"),
])
def test_abbreviated_flags_are_refused_on_every_command(capsys, argv, abbreviated):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and abbreviated in err, err


def test_readme_renderer_refuses_an_abbreviation(capsys):
    from controller.report import readme

    with pytest.raises(SystemExit) as exit_:
        readme.main([".", "--he"])
    assert exit_.value.code == 2


def test_help_lists_the_subcommands_before_the_flags(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    head = out[:out.index("\noptions:")]  # what comes before the first flag
    assert len(head.splitlines()) < 15, head
    for sub in ("compare ROOT_A ROOT_B", "view [DIR]", "sft --data", "import FILE.jsonl", "export --root"):
        assert f"live-tool-dagger {sub}" in head, head
