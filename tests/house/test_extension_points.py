"""A new extension is one registry entry and nothing else: a cost unit registered here (in the
test, no other file touched) is a ``--cost`` choice, a valid study setting, summed into every
outcome, described in the summary's ``cost_units``, drawn as a cost panel, and reported in the
routing units sentence and the split-seed tables.

This replaces the map test that could only fail on an import error; on the code before
issue 33 (figures, report, split seeds and simulate each with their own list of units, ``--cost``
without choices) the fake unit could not even be registered (no `register`, no behaviour or word
fields), and adding one to `UNITS` by hand left figures, report and split seeds without it.

TODO(learner registry, issue 33 item 1): the learner engineer adds a fake learner here (fit
function + report section, registered in a test, checked trained, simulated and reported).
A fake backend registered here is a ``--backend`` choice and the run config asks its declared
capabilities (deterministic, caches generations). TODO(issue 33 item 1): the pipeline's remaining
backend names (request slice, hf hub preflight, synth memo, probe sharing, openai preflight) become
capabilities too, and this test then traces a few cases with the fake backend.
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_unit():
    from controller.env.cost import UNITS, CostUnit, register

    u = register(CostUnit("fakes", "fake_cost", 10.0, "tens of fakes", "fakes", axis="tens of fakes (axis)",
                          panel="tens of fakes per scored case (panel)", text="tens of fakes (report)",
                          column="Fakes (column)", round_cost=lambda record, rnd: 3))
    try:
        yield u
    finally:
        UNITS.pop(u.name)


def _records(n: int = 12) -> list[dict]:
    lines = (ROOT / "results" / "foofah" / "fresh_traces.jsonl").read_text().splitlines()
    return [json.loads(line) for line in itertools.islice((x for x in lines if x.strip()), n)]


def test_a_cost_unit_is_validated_from_its_entry(fake_unit, capsys):
    from controller import cli
    from tracegen.errors import ConfigError
    from controller.study.experiment import ExperimentConfig

    cfg = cli.build_config(cli.make_parser().parse_args(["--cost", "fakes"]))
    assert cfg.experiment.cost == "fakes"
    assert ExperimentConfig(cost="fakes").cost == "fakes"
    with pytest.raises(SystemExit):
        cli.make_parser().parse_args(["--cost", "nope"])
    assert "fakes" in capsys.readouterr().err  # the choices the registry lists
    with pytest.raises(ConfigError):
        ExperimentConfig(cost="nope")


def test_a_cost_unit_is_summed_and_described_from_its_entry(fake_unit):
    from controller.env.cost import cost_unit, cost_units, unit
    from controller.env.registry import fixed_policies
    from controller.env.simulate import simulate

    records = _records()
    outs = simulate(fixed_policies()["always_tool_visible"], records)
    for o in outs:
        assert o["fake_cost"] == 3 * o["program_generations"]
        assert unit("fakes").case(o) == o["fake_cost"] / 10
    assert cost_units(records)["fakes"] == "fakes"
    assert cost_unit("fakes") == "tens of fakes"


def test_a_cost_unit_is_drawn_and_reported_from_its_entry(fake_unit):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from controller.report.figures import cost_per_case, draw_cost_panels
    from controller.report.split_seeds import render_split_seeds
    from controller.report.study import routing_md
    from controller.study.split_seeds import spread_summary

    assert cost_per_case({"n": 2, "fake_cost": 40}, "fakes") == 2.0
    pt = {"cost": 1.0, "accuracy": 0.5, "n": 4, "n_families": 2}
    block = {"points": {"direct_only": pt, "always_tool_visible": {**pt, "cost": 2.0, "accuracy": 0.75}},
             "learners": {}}
    fig = draw_cost_panels({"routing": {"test": {"fakes": block}}}, plt)
    assert [ax.get_xlabel() for ax in fig.axes if ax.get_xlabel()] == ["tens of fakes per scored case (panel)"]
    plt.close(fig)

    routing = json.loads((ROOT / "results" / "foofah" / "final_summary.json").read_text())["routing"]
    assert "fakes: tens of fakes (report)" in "\n".join(routing_md({"routing": routing}))

    rec = {"policy": "direct_only", "case_id": "a", "family": "f", "correct": True, "fake_cost": 7}
    ss = spread_summary([{"split_seed": 0, "folds": [], "records": [rec]}])
    assert ss["spread"]["direct_only"]["fake_cost"]["mean"] == 7
    text = "\n".join(render_split_seeds({"split_seeds": ss}))
    assert "| Fakes (column) |" in text and "| 7 at every split seed |" in text


class FakeBackend:
    """A backend registered in the test: deterministic, keeps no generation cache."""

    name = "fake"
    deterministic = True
    caches_generations = False


@pytest.fixture
def fake_backend():
    from tracegen.backends import _REGISTRY

    _REGISTRY["fake"] = f"{__name__}:FakeBackend"
    try:
        yield FakeBackend
    finally:
        _REGISTRY.pop("fake")


def test_a_backend_is_chosen_and_asked_from_its_entry(fake_backend, tmp_path):
    from controller import cli
    from tracegen.backends import backend_class

    assert backend_class("fake") is FakeBackend
    cfg = cli.build_config(cli.make_parser().parse_args(
        ["--backend", "fake", "--program-samples", "2", "--root", str(tmp_path)]))
    # deterministic: K > 1 samples at temperature 0 accepted; no generation cache made up for it
    assert cfg.backend.name == "fake" and cfg.rollout.program_samples == 2 and cfg.backend.cache_dir is None
