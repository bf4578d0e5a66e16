"""Data checked once, at its boundary: a record's split against the split manifest (where traces
and manifest meet), the schema upgrade (in ``read_traces`` and at ``analyze``'s entry, nowhere
else) and the repair budget a study file is checked against (the traces', not the config's)."""
import json
from dataclasses import replace
from pathlib import Path

import pytest

from e2e_helpers import REPO, small_case_dir, untimed
from controller import ExperimentConfig, RunConfig, analyze, run
from controller.checks import UsageError
from controller.env.state import chains
from tracegen import records as records_mod
from tracegen.records import TraceFileError, assign_splits, read_traces, upgrade_record
from tracegen.rollout import RolloutConfig

QUIET = dict(log=lambda *a: None)
FAST = dict(policies=("direct_only", "always_tool_visible"), progress=False, bootstrap_resamples=50)
STUDY = ('name = "s"\ncost_unit = "generations"\n[[hypotheses]]\nname = "h"\nprimary = true\n'
         'kind = "accuracy_diff"\npolicies = ["repair_at_most_2", "direct_only"]\nsplit = "test"\n')


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """A traced run with three repairs (families: 6, one test, one dev)."""
    root = tmp_path_factory.mktemp("boundary")
    cases = small_case_dir(root / "cases", families=6, per_family=1)
    cfg = RunConfig(root=str(root / "run"), cases=str(cases), generate_traces=True, progress=False, workers=1,
                    test_families=1, dev_families=1, rollout=RolloutConfig(max_repairs=3, progress=False),
                    experiment=ExperimentConfig(**FAST))
    run(cfg, **QUIET)
    return cfg


def reanalysis(cfg, **experiment):
    return replace(cfg, generate_traces=False, rollout=RolloutConfig(progress=False),
                   experiment=ExperimentConfig(**{**FAST, **experiment}))


# ---- the split ------------------------------------------------------------------------------

def rec(case_id, family, split):
    return {"case_id": case_id, "family": family, "split": split}


def test_assign_splits_takes_the_manifests_split_and_refuses_another():
    fams = {"train": ["a"], "dev": ["b"], "test": ["c"]}
    recs = [rec("a/1", "a", "train"), rec("c/1", "c", "unassigned"), rec("p/1", "c", "unassigned"),
            rec("z/1", "z", "unassigned")]
    assign_splits(recs, fams, ["p/1"], trace_file="t.jsonl", manifest="m.json")
    assert [r["split"] for r in recs] == ["train", "test", "unassigned", "unassigned"]  # unassigned: exempt
    with pytest.raises(TraceFileError) as e:
        assign_splits([rec("b/1", "b", "test")], fams, trace_file="t.jsonl", manifest="m.json")
    msg = str(e.value)
    assert msg.startswith("t.jsonl: ") and "'b/1'" in msg and "'test'" in msg and "'dev'" in msg and "m.json" in msg
    moved = [rec("b/1", "b", "test")]  # a deliberate re-split relabels in memory
    assign_splits(moved, fams, trace_file="t.jsonl", manifest="m.json", check=False)
    assert moved[0]["split"] == "dev"


def _edit_split(path, new):
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    old, first["split"] = first["split"], new
    path.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    return first["case_id"], old


def test_a_record_traced_in_another_split_is_refused_before_anything_is_written(traced, tmp_path):
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(traced.root, root)
    cfg = replace(reanalysis(traced), root=str(root))
    traces = root / "reports" / "fresh_traces.jsonl"
    split = json.loads(traces.read_text().splitlines()[0])["split"]
    other = next(s for s in ("train", "dev", "test") if s != split)
    case_id, _ = _edit_split(traces, other)
    listing = sorted(p.name for p in root.iterdir())
    with pytest.raises(UsageError) as e:
        run(cfg, **QUIET)
    msg = str(e.value)
    assert len(msg.splitlines()) == 1 and str(traces) in msg and repr(case_id) in msg
    assert repr(other) in msg and repr(split) in msg and "split_manifest.json" in msg
    assert sorted(p.name for p in root.iterdir()) == listing  # nothing moved aside

    # a manifest given on purpose re-splits the traces in memory: no mismatch
    m = json.loads((root / "reports" / "split_manifest.json").read_text())
    fams = m["split_families"]
    fams["train"], fams["test"] = fams["test"], fams["train"]
    (tmp_path / "other.json").write_text(json.dumps(m))
    summary = run(replace(cfg, split_manifest=str(tmp_path / "other.json")), **QUIET)
    assert summary["splits"]["test"]["families"] == fams["test"]


def test_records_written_unassigned_take_the_manifests_split(traced, tmp_path):
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(traced.root, root)
    case_id, split = _edit_split(root / "reports" / "fresh_traces.jsonl", "unassigned")
    run(replace(reanalysis(traced), root=str(root)), **QUIET)
    rows = [json.loads(line) for line in (root / "reports" / "predictions" / "direct_only.jsonl").read_text().splitlines()]
    assert {r["split"] for r in rows if r["case_id"] == case_id} == {split}


# ---- the schema upgrade ---------------------------------------------------------------------

V1 = REPO / "tests" / "data" / "v1_library_traces.jsonl"


def raw_v1(n=40):
    """Version-1 records as a K = 2 run wrote them: the first ``n`` of a v1 library run, each given
    a flat ``samples`` list (one extra WRITE round: its first round again) with its hidden grade."""
    out = []
    for line in V1.read_text().splitlines()[:n]:
        r = json.loads(line)
        r["samples"], r["hidden"]["samples"] = r["rounds"][:1], r["hidden"]["rounds"][:1]
        out.append(r)
    return out


def test_chains_refuses_a_record_not_upgraded():
    v1 = raw_v1()[0]
    with pytest.raises(ValueError, match="schema version 1"):
        chains(v1)
    up = upgrade_record(v1)
    assert len(chains(up)) == 1 + len(v1["samples"])


def test_the_upgrade_runs_once_per_record(monkeypatch, tmp_path):
    calls = []
    real = records_mod.upgrade_record

    def counted(r):
        calls.append(r.get("case_id"))
        return real(r)

    monkeypatch.setattr(records_mod, "upgrade_record", counted)
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in raw_v1()))
    recs = read_traces(path)
    assert len(calls) == len(recs)  # once each on read
    calls.clear()
    from controller import pipeline

    monkeypatch.setattr(pipeline, "upgrade_record", counted)
    analyze(recs, ExperimentConfig(**FAST), **QUIET)
    assert len(calls) == len(recs)  # once each at analyze's entry (a no-op on v2), none in the study


def test_v1_records_from_python_analyse_as_read_from_disk(tmp_path):
    raw = raw_v1()
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in raw))
    from_disk, _ = analyze(read_traces(path), ExperimentConfig(**FAST), **QUIET)
    from_python, _ = analyze(raw, ExperimentConfig(**FAST), **QUIET)
    assert json.dumps(untimed(from_python), sort_keys=True) == json.dumps(untimed(from_disk), sort_keys=True)
    assert from_disk["policy_results"]["always_tool_visible"]["test"]["n"] > 0


# ---- the repair budget ----------------------------------------------------------------------

def test_a_study_is_checked_against_the_traces_repair_budget(traced, tmp_path):
    """Traces made with --max-repairs 3, re-analysed with the default config (2 repairs): a study
    naming repair_at_most_2 is accepted (the old check used the config's budget and refused it)."""
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    assert RolloutConfig().max_repairs == 2
    summary = run(reanalysis(traced, study=str(study)), **QUIET)
    assert [h["name"] for h in summary["hypotheses"]] == ["h"]
    recs = read_traces(Path(traced.root) / "reports" / "fresh_traces.jsonl")
    assert {r["max_repairs"] for r in recs} == {3}
    study_keys, _ = analyze(recs, ExperimentConfig(**{**FAST, "study": str(study)}), **QUIET)
    assert [h["name"] for h in study_keys["hypotheses"]] == ["h"]
    # a budget the traces do not have is still refused, naming the flag's field
    study.write_text(STUDY.replace("repair_at_most_2", "repair_at_most_3"))
    with pytest.raises(UsageError, match="experiment.study"):
        run(reanalysis(traced, study=str(study)), **QUIET)
