"""A new extension is one registry entry and nothing else: a cost unit registered here (in the
test, no other file touched) is a ``--cost`` choice, a valid study setting, summed into every
outcome, described in the summary's ``cost_units``, drawn as a cost panel, and reported in the
routing units sentence and the split-seed tables.

This replaces the map test that could only fail on an import error; on the code before
issue 33 (figures, report, split seeds and simulate each with their own list of units, ``--cost``
without choices) the fake unit could not even be registered (no `register`, no behaviour or word
fields), and adding one to `UNITS` by hand left figures, report and split seeds without it.

A fake learner registered here (one ``Learner`` entry: its fit and its report section) is fitted
on the run's split, at every learner seed and in every cross-validation fold, simulated and
paired-tested like every policy, accepted in ``--policies`` and in a study file's hypotheses,
and reported (its rows in report order, its own section). On the code before the learner table
(every learner wired by hand in ``study/experiment.py`` and again in ``study/cv.py``, the
report's learner sections a hand list in ``report/markdown.py``) a policy added to the policy
table by hand was accepted by a study file but never fitted, simulated nor reported.
A fake backend registered here (one class and one registry line) is a ``--backend`` choice, and
a run with it is traced end to end: the run config asks its declared capabilities (deterministic,
caches generations), its ``check_config`` refuses a setting before anything is written, its
``request_slice`` sizes every ``generate`` call, and its ``trace_settings`` enter the run's
``trace_config`` (so ``--resume`` refuses a change), with no file outside this test touched.
"""
from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pytest

from tracegen.backends import Backend, Completion
from tracefactory import foofah_one_per_family

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
    lines = gzip.decompress((ROOT / "results" / "foofah" / "fresh_traces.jsonl.gz").read_bytes()).decode().splitlines()
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


class FakeBackend(Backend):
    """A backend registered in the test: deterministic, keeps no generation cache, answers three
    requests per call, refuses a temperature above 1, and its knob changes its traces."""

    name = "fake"
    deterministic = True
    caches_generations = False
    calls: list[int] = []

    @classmethod
    def check_config(cls, config):
        from tracegen.errors import ConfigError

        if config.temperature > 1:
            raise ConfigError("--temperature: the fake backend samples at 1 at most", field="temperature")

    @classmethod
    def request_slice(cls, config):
        return 3

    @classmethod
    def trace_settings(cls, config):
        return {"fake_knob": 7}

    def generate(self, requests):
        type(self).calls.append(len(requests))
        out = []
        for r in requests:  # the direct answer: the new input unchanged; a program: the identity
            text = (json.dumps(r.task.test_table) if r.kind == "direct"
                    else "```python\ndef transform(table):\n    return table\n```")
            out.append(Completion(text, 10, 10, 1.0))
        return out


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


def test_a_run_traces_with_a_fake_backend_from_its_entry(fake_backend, tmp_path, capsys):
    from controller import cli
    from controller.config import RunConfig
    from controller.pipeline import run
    from tracegen.backends import BackendConfig
    from tracegen.records import read_traces

    args = ["--backend", "fake", "--temperature", "1.5", "--root", str(tmp_path / "refused"), "--generate-traces"]
    assert cli.main(args) == 2
    assert "--temperature: the fake backend samples at 1 at most" in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()  # refused before anything is written

    FakeBackend.calls.clear()
    root = tmp_path / "run"
    run(RunConfig(root=str(root), cases="library", generate_traces=True, cases_per_family=1, limit_total=8,
                  progress=False, backend=BackendConfig(name="fake")), log=lambda *a: None)
    records = read_traces(root / "reports" / "fresh_traces.jsonl")
    assert len(records) == 8 and {r["backend"] for r in records} == {"fake"}
    assert FakeBackend.calls and max(FakeBackend.calls) <= 3  # its request slice
    trace_config = json.loads((root / "reports" / "run_config.json").read_text())["trace_config"]
    assert trace_config["fake_knob"] == 7
    assert not (root / "reports" / "cache" / "generations").exists()  # it keeps no generation cache


class _FakeLearnerPolicy:
    """The fake learner's policy: a tool round when one is allowed, else the direct answer."""

    name = "fake_learner"

    def act(self, states):
        return ["WRITE" if "WRITE" in s.valid_actions else "DIRECT" for s in states]


@pytest.fixture
def fake_learner():
    from controller.env.registry import PolicySpec
    from controller.learn.registry import Learner, register, unregister

    fits = []

    def fit(ctx):
        fits.append((ctx.fold, ctx.cfg.seed, len(ctx.train)))
        if ctx.fold is None:  # the run's own split: what the report section shows
            ctx.info["fake_learner"] = {"n_train": len(ctx.train)}
        return {"fake_learner": _FakeLearnerPolicy()}

    def section(summary):
        info = summary.get("fake_learner")
        return ["## Fake learner", "", f"Fitted on {info['n_train']} training cases.", ""] if info else []

    register(Learner("fake_learner", (PolicySpec("fake_learner", "learned", about="a fake imitation baseline"),), fit, section=section, seeded=True,
                     in_folds=True))
    try:
        yield fits
    finally:
        unregister("fake_learner")


_one_per_family = foofah_one_per_family


def test_a_learner_is_fitted_evaluated_validated_and_reported_from_its_entry(fake_learner, tmp_path):
    from controller.env.registry import names, ordered
    from controller.report.markdown import render_report
    from controller.study.experiment import ExperimentConfig, run_experiment
    from controller.study.hypotheses import StudyError, load_study

    study = tmp_path / "fake.toml"
    study.write_text('name = "fake"\ncost_unit = "generations"\n\n[[hypotheses]]\nname = "fake_beats_direct"\n'
                     'primary = true\nkind = "accuracy_diff"\npolicies = ["fake_learner", "direct_only"]\n'
                     'split = "cv_pooled"\n')
    assert load_study(str(study), known_policies=names(max_repairs=3)).hypotheses  # validated from the table
    with pytest.raises(StudyError):
        load_study(str(study), known_policies=[n for n in names(max_repairs=3) if n != "fake_learner"])
    assert ExperimentConfig(policies=("fake_learner", "direct_only")).policies == ("fake_learner", "direct_only")

    cfg = ExperimentConfig(progress=False, cv_folds=2, seeds=2, rule_lambdas=(0.0,), frontier_lambdas=(0.0,),
                           study=str(study))
    summary, outcomes = run_experiment(_one_per_family(), cfg, log=lambda *a: None)
    # fitted: on the run's split at both learner seeds, and in each of the 2 folds
    assert sorted((-1 if f is None else f, s) for f, s, _ in fake_learner) == [(-1, 0), (-1, 1), (0, 0), (1, 0)]
    # evaluated: simulated on every split, seeds, pooled CV, paired tests and the study's hypothesis
    assert {"dev", "test"} <= set(summary["policy_results"]["fake_learner"]) and outcomes["fake_learner"]
    assert summary["seeds"]["fake_learner"]["test"]["seeds"] == [0, 1]
    assert summary["cv"]["pooled"]["fake_learner"]["n"] == sum(f["n_test"] for f in summary["cv"]["folds"])
    assert "fake_learner" in summary["paired_tests"]["test"]
    hyp = next(h for h in summary["hypotheses"] if h["name"] == "fake_beats_direct")
    assert hyp["policies"] == ["fake_learner", "direct_only"] and hyp.get("verdict")
    # reported: in report order among the learned policies, and its own section
    order = ordered(summary["policy_results"])
    assert order.index("lora_seq_policy" if "lora_seq_policy" in order else "learned_rule") < order.index(
        "fake_learner") < order.index("majority_action")
    md = render_report(summary)
    assert f"Fitted on {summary['fake_learner']['n_train']} training cases." in md
    assert md.index("## Fake learner") > md.index("## Nulls and imitation baselines")
    assert "| `fake_learner` |" in md
    # its words come from its policy entry: a row of the nulls table, from the entry alone
    nulls = md[md.index("## Nulls and imitation baselines"):md.index("## Fake learner")]
    assert "| `fake_learner` | a fake imitation baseline |" in nulls


def test_every_learner_section_is_a_report_function():
    from controller.learn.registry import LEARNERS
    from controller.report.learners import section_of

    for learner in LEARNERS.values():
        render = section_of(learner)  # a name outside controller.report is refused
        assert render is None or render({}) == [], learner.name  # a summary without its data: no section
