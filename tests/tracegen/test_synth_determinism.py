"""The synth backend's traces do not depend on machine load: budgets count search nodes, and the
wall-clock cap is off unless a user sets one; when a set cap stops a search, the round says so
(``finish_reason: "budget"``), the failure taxonomy counts it and the run's trace config names it."""
import json
import multiprocessing
import time
from pathlib import Path

import pytest

from controller.study.failures import failure_breakdown
from e2e_helpers import untimed
from tracegen.backends import BackendConfig

ROOT = Path(__file__).resolve().parents[2]


def _burn(stop_at: float) -> None:
    x = 0
    while time.time() < stop_at:
        x = (x * 7 + 1) % 1_000_003




def _trace(cases, config: BackendConfig):
    sandbox = pytest.importorskip("sandbox")
    from tracegen import rollout
    from tracegen.backends.synth import SynthBackend

    backend = SynthBackend(config)
    try:
        with sandbox.Sandbox(workers=1) as sb:
            return rollout.trace_cases(cases, {}, backend, sb,
                                       rollout.RolloutConfig(max_repairs=2, program_samples=2, progress=False))
    finally:
        backend.close()


def _cases():
    from cases import load_cases

    # every 50th Foofah file: a few that pass at once, a few whose repairs search hard
    return load_cases(ROOT / "cases" / "foofah")[::50]


def test_default_has_no_wall_clock_cap():
    from controller.cli import make_parser

    assert BackendConfig().synth_time_budget_s is None
    assert make_parser().parse_args([]).synth_time_budget is None


def test_same_records_beside_a_cpu_hog():
    cases = _cases()
    cfg = BackendConfig(synth_fix_nodes=6000, extra={"synth_workers": 1})
    quiet = _trace(cases, cfg)
    ctx = multiprocessing.get_context("spawn")
    hogs = [ctx.Process(target=_burn, args=(time.time() + 120,), daemon=True) for _ in range(2)]
    for h in hogs:
        h.start()
    try:
        loaded = _trace(cases, cfg)
    finally:
        for h in hogs:
            h.terminate()
            h.join()
    a = [json.dumps(untimed(r), sort_keys=True) for r in quiet]
    b = [json.dumps(untimed(r), sort_keys=True) for r in loaded]
    assert a == b
    # the repairs did search (the comparison covers real work, not only cache hits)
    nodes = [r.get("search_nodes", 0) for rec in quiet for ch in [rec["rounds"], *rec.get("samples", [])]
             for r in ch]
    assert max(nodes) > 1000
    assert not any(r.get("finish_reason") == "budget" for rec in quiet for r in rec["rounds"])


def test_a_set_cap_that_fires_is_recorded_and_counted():
    from cases import Case

    # a big table and a target the library cannot reach: the search runs until something stops it
    big_in = [[f"r{i}", str(i), f"x{i}-y{i}"] for i in range(150)]
    big_out = [[f"z{i}"] for i in range(150)]
    case = Case.from_tables("big/0", "big", big_in, big_out, big_in[:5], [["z0"]])
    cfg = BackendConfig(synth_write_nodes=10_000_000, synth_fix_nodes=10_000_000, synth_time_budget_s=0.05,
                        extra={"synth_workers": 1})
    recs = _trace([case], cfg)
    rounds = recs[0]["rounds"]
    assert rounds and all(r["finish_reason"] == "budget" for r in rounds)
    counts = failure_breakdown(recs)["total"]
    assert counts["budget_cut_rounds"] == len(rounds)


def test_trace_config_names_a_set_cap_only():
    from controller.pipeline import trace_config
    from controller.cli import build_config, make_parser

    plain = build_config(make_parser().parse_args(["--root", "/tmp/x"]))
    capped = build_config(make_parser().parse_args(["--root", "/tmp/x", "--synth-time-budget", "5"]))
    assert "synth_time_budget_s" not in trace_config(plain, [])
    assert trace_config(capped, [])["synth_time_budget_s"] == 5.0
