"""Visible state: what a deployed controller may see at each decision point.

The state builder is leak-free by construction. ``visible_view`` drops ``hidden`` and every round
not yet revealed by the actions taken so far, and ``visible_state`` reads nothing but that view:
no hidden answer (not even its shape), no later rounds, no program sample not yet drawn, no
program output before WRITE. With ``--program-samples`` K > 1 a state is a position in the case's
tree (``Pos``); ``commit_choice`` is the one rule that decides which passing program PROGRAM commits.

Committing a chosen sample (K > 1 only): besides ``PROGRAM`` (the commit rule), a state offers
``PROGRAM:j`` for every *alternative* passing output: sample j is revealed, its latest round passes
the public example, its output on the new input exists, differs from the output ``PROGRAM``
commits, and j is the earliest sample with that output (one action per distinct output, so no two
commit actions are the same commit). They are listed right after ``PROGRAM`` in the commit rule's
ranking (most support first, ties to the earliest sample). With K = 1 no ``PROGRAM:j`` exists.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from sandbox import ERRORS as SANDBOX_ERRORS

ACTIONS = ("DIRECT", "WRITE", "FIX", "PROGRAM", "RESAMPLE")  # the base actions (K = 1: all there is)
COMMIT_SAMPLE = "PROGRAM:"  # prefix of the K > 1 actions that commit one chosen passing sample


def commit_action(j: int) -> str:
    return f"{COMMIT_SAMPLE}{j}"


def committed_sample_of(action: str) -> int | None:
    """The sample index ``PROGRAM:j`` commits (None for any other action)."""
    return int(action[len(COMMIT_SAMPLE):]) if action.startswith(COMMIT_SAMPLE) else None


def is_commit(action: str) -> bool:
    """PROGRAM or PROGRAM:j: commit a program's output."""
    return action == "PROGRAM" or action.startswith(COMMIT_SAMPLE)


def base_actions(valid: tuple) -> tuple:
    """The valid actions without the chosen-sample commits (the K = 1 action space)."""
    return tuple(a for a in valid if not a.startswith(COMMIT_SAMPLE))
# a round's status: no code, one of the sandbox's errors, or ran but differs from the example
ERRORS = ("parse",) + SANDBOX_ERRORS + ("wrong_output",)

# A position in the tree of one case: ``pos[j]`` = rounds revealed of program sample j, for the
# samples drawn so far (drawn in index order, so the tuple names the revealed attempt set exactly).
# () is the start; WRITE -> (1,); FIX adds a round to the latest sample; RESAMPLE appends (1).
# With --program-samples 1 a position is () or (n,), the pilot's "n rounds revealed".
Pos = tuple


@dataclass(frozen=True)
class State:
    case_id: str
    revealed: int  # program rounds revealed so far, over all samples (0 = start)
    valid_actions: tuple[str, ...]
    features: dict[str, float]
    text: str  # the same state rendered for a language-model policy
    pos: Pos = ()  # the tree position; (case_id, pos) is a state's identity (DAgger's dedupe)

    @property
    def key(self) -> tuple:
        return (self.case_id, self.pos)


def as_pos(revealed) -> Pos:
    """Accept the pilot's integer step (rounds of sample 0) as a tree position."""
    if isinstance(revealed, int):
        return (revealed,) if revealed > 0 else ()
    return tuple(revealed)


def chains(record: dict) -> list[tuple[list, list]]:
    """(rounds, hidden grades) of every program sample: sample 0 is ``rounds``, then ``samples``.

    Records of the current schema only: a version-1 record (a flat ``samples`` list) is upgraded
    once where records come in (``read_traces``, ``controller.analyze``), so one handed here as it
    was read from disk is refused (``ValueError``) rather than upgraded again at every state."""
    if record.get("schema_version") == 1:
        raise ValueError(f"record {record.get('case_id', '?')!r} is trace schema version 1: upgrade it first "
                         "(tracegen.records.upgrade_record; read_traces and controller.analyze do)")
    hidden = record["hidden"]
    out = [(record["rounds"], hidden["rounds"])]
    out += list(zip(record.get("samples", []), hidden.get("samples", [])))
    return out


def sample_repairs(record: dict, j: int) -> int:
    """Repair rounds allowed on sample j (version-1 extra samples were never repaired; an imported
    chain the source stopped repairing before ``max_repairs`` has its own, ``chain_repairs``)."""
    if "chain_repairs" in record:
        return record["chain_repairs"][j]
    return record["max_repairs"] if j == 0 else record.get("sample_repairs", record["max_repairs"])


# What a controller may read of a record; everything else (``hidden``, later rounds, extra program
# samples not drawn yet, totals over work not yet done) stays out. A whitelist, so a new field is
# hidden by default.
VISIBLE_KEYS = ("case_id", "family", "split", "backend", "model", "max_repairs", "task", "direct")


def visible_view(record: dict, revealed) -> dict:
    """The record as a controller may see it at tree position ``revealed`` (or the pilot's int).

    ``chains`` holds the revealed rounds of every drawn sample; ``rounds`` is the latest sample's
    (with one sample: the pilot's chain). ``program_samples`` (K) and the repairs allowed per
    sample are configuration, visible like ``max_repairs``."""
    return _json_copy(shared_view(record, revealed))  # a copy: a policy cannot reach back into the record


_JSON_ATOMS = frozenset((str, int, float, bool, type(None)))


class _NotJson(Exception):
    pass


def _copy(obj):
    t = type(obj)
    if t is dict:
        if not all(type(k) is str for k in obj):
            raise _NotJson
        return {k: v if type(v) in _JSON_ATOMS else _copy(v) for k, v in obj.items()}
    if t is list:
        return [v if type(v) in _JSON_ATOMS else _copy(v) for v in obj]
    if t in _JSON_ATOMS:
        return obj
    raise _NotJson


def _json_copy(obj):
    """``json.loads(json.dumps(obj))``: for data that is JSON already (str-keyed dicts, lists and
    JSON scalars, as records read from a trace file are) a plain recursive copy, which gives the
    same result in half the time; anything else (tuples, other keys or types) takes the round trip."""
    try:
        return _copy(obj)
    except _NotJson:
        return json.loads(json.dumps(obj))


def shared_view(record: dict, revealed) -> dict:
    """``visible_view`` without the copy: the same content, sharing the record's objects. For the
    environment's own read-only look-ups (the valid actions and the commit rule at a position, in
    the oracle and the simulator), where a deep copy per call was most of their time; whatever a
    policy reads goes through ``visible_view``."""
    pos = as_pos(revealed)
    view = {k: record[k] for k in VISIBLE_KEYS}
    chs = chains(record)
    # an imported case with no program recorded has one empty chain: no sample can be drawn
    view["program_samples"] = len(chs) if record["rounds"] else 0
    view["repairs"] = [sample_repairs(record, j) for j in range(view["program_samples"])]
    view["chains"] = [chs[j][0][:n] for j, n in enumerate(pos)]
    view["rounds"] = view["chains"][-1] if pos else []
    return view


def passing(view: dict) -> list[tuple[int, object]]:
    """(sample index, output on the new input) of every revealed program that passes the public
    example. A chain stops at its first pass, so a passing program is its chain's last round."""
    return [(j, ch[-1]["test_output"]) for j, ch in enumerate(view["chains"]) if ch and ch[-1]["visible_pass"]]


def ranked_outputs(view: dict) -> list[tuple[object, list[int]]]:
    """Distinct outputs of the passing programs with the samples that produced them, in the commit
    rule's ranking: most programs agreeing first, a missing output (run failed) below any output,
    ties to the earliest-drawn sample."""
    groups: dict[str, list[int]] = {}
    outs: dict[str, object] = {}
    for j, out in passing(view):
        key = json.dumps(out)
        groups.setdefault(key, []).append(j)
        outs[key] = out
    ranked = sorted(groups.items(), key=lambda kv: (len(kv[1]), kv[0] != "null", -kv[1][0]), reverse=True)
    return [(outs[k], js) for k, js in ranked]


def commit_choice(view: dict) -> int | None:
    """THE COMMIT RULE (one rule for every policy): which sample's program PROGRAM commits.

    Among the revealed programs that pass the public example, take the output on the new input
    that the most of them agree on (a program whose run on the new input failed has no output and
    ranks below any output); ties go to the output of the earliest-drawn sample. Returns that
    output's earliest sample index, or None when no program passes."""
    ranked = ranked_outputs(view)
    return ranked[0][1][0] if ranked else None


def alternative_samples(view: dict) -> list[int]:
    """Samples ``PROGRAM:j`` may commit (K > 1): the earliest sample of every passing output other
    than the commit rule's, outputs that exist only, in the commit rule's ranking."""
    if view["program_samples"] <= 1:
        return []
    return [js[0] for out, js in ranked_outputs(view)[1:] if out is not None]


def valid_actions(view: dict) -> tuple[str, ...]:
    """Valid actions from the action table in DESIGN.md, read off a visible view."""
    chs = view["chains"]
    if not chs:
        return ("DIRECT", "WRITE") if view["program_samples"] else ("DIRECT",)  # 0: no program was recorded
    out = ["DIRECT"]
    if passing(view):
        out.append("PROGRAM")
        out += [commit_action(j) for j in alternative_samples(view)]
    j, latest = len(chs) - 1, chs[-1]
    if not latest[-1]["visible_pass"] and len(latest) - 1 < view["repairs"][j]:
        out.append("FIX")
    if len(chs) < view["program_samples"]:
        out.append("RESAMPLE")
    return tuple(out)


def _shape(t) -> tuple[int, int]:
    """(rows, widest row) of a 2-D value; (length, 0) of a flat list; (0, 0) of anything else."""
    if not t or type(t) is not list:
        return 0, 0
    if not all(type(r) is list for r in t):
        return len(t), 0
    return len(t), max((len(r) for r in t), default=0)


def _agreement(a, b) -> float:
    """Share of cells equal at the same position (0 when either is missing)."""
    if not a or not b or type(a) is not list or type(b) is not list:
        return 0.0
    a, b = _rows(a), _rows(b)
    total = max(len(a), len(b)) * max(max(len(r) for r in a), max(len(r) for r in b), 1)
    same = sum(1 for ra, rb in zip(a, b) for x, y in zip(ra, rb) if x == y)
    return same / total if total else 0.0


def _rows(v: list) -> list:
    """A 2-D value's rows; a flat list as its one row."""
    return v if all(type(r) is list for r in v) else [v]


def _coverage(table, source) -> float:
    """Share of a table's cells that appear verbatim in the source table (copy-like answers)."""
    if type(table) is not list or type(source) is not list:
        return 0.0
    cells = [c for r in _rows(table) for c in r]
    if not cells:
        return 0.0
    pool = {json.dumps(c) if type(c) in (list, dict) else c for r in _rows(source) for c in r}
    cells = [json.dumps(c) if type(c) in (list, dict) else c for c in cells]
    return sum(c in pool for c in cells) / len(cells)


def _geometry(view: dict) -> tuple[int, int, int, int, int, int, int]:
    """(dims, example input rows, example output rows, example input cols, example output cols,
    examples, predicted output cols) of a task: the visible arithmetic the shape features compare
    against (rows and cols summed over the examples). ``dims``: 2 when every value
    of the task is 2-D (tables and grids always), 1 when every one is at least a flat list, else 0.
    Several examples pool their rows (one example: its own ratios, as ever); the predicted output
    width is the width every example output shares, else the new input's when every example keeps
    its input's width, else the first example's."""
    from tracegen.records import task_examples, task_test_input, task_value_type

    examples, test_in = task_examples(view), task_test_input(view)
    dims = 2 if task_value_type(view) in ("table", "grid") else _dims([test_in, *(v for e in examples for v in e)])
    ins, outs = [_shape(x) for x, _ in examples], [_shape(y) for _, y in examples]
    eir, eor = sum(r for r, _ in ins), sum(r for r, _ in outs)
    eic, eoc = sum(c for _, c in ins), sum(c for _, c in outs)
    tic = _shape(test_in)[1]
    widths = {c for _, c in outs}
    want_cols = outs[0][1] if len(widths) == 1 else (
        tic if all(o[1] == i[1] for o, i in zip(outs, ins)) else outs[0][1])
    return dims, eir, eor, eic, eoc, len(ins), want_cols


def _dims(values) -> int:
    from cases import shape

    shapes = [shape(v) for v in values]
    return 0 if any(s is None for s in shapes) else min(len(s) for s in shapes)


# Shape features (``_features``): ABSENT (not 0) from a state whose task values have no rows
# (strings, numbers, objects: ``dims`` 0), the column ones also where they have no columns (flat
# lists: ``dims`` 1); everything else about a state is defined for any value.
COL_FEATURES = frozenset((
    "direct_cols_match_example", "example_cols_ratio", "prog_cols_match_example", "commit_cols_match_example",
    "alt_cols_match_example"))
ROW_FEATURES = frozenset((
    "direct_rows_vs_ratio", "example_rows_ratio", "test_rows_vs_example", "prog_rows_vs_ratio",
    "commit_rows_vs_ratio", "alt_rows_vs_ratio", "direct_copy_coverage", "prog_copy_coverage",
    "prog_direct_agreement", "commit_direct_agreement", "alt_direct_agreement"))


def absent_features(dims: int) -> frozenset:
    """The shape features a task of ``dims`` (``_geometry``) has none of."""
    return frozenset() if dims >= 2 else COL_FEATURES | (ROW_FEATURES if dims == 0 else frozenset())


def _features(view: dict) -> dict[str, float]:
    from tracegen.records import direct_value, task_test_input

    dims, eir, eor, eic, eoc_sum, n, eoc = _geometry(view)
    test_in = task_test_input(view)
    tir = _shape(test_in)[0]
    direct = direct_value(view)
    dr, dc = _shape(direct)
    # the row count the examples' in->out ratio predicts for the new input (visible arithmetic)
    want_rows = tir * eor / eir if eir else 0.0
    f = {
        "direct_parsed": float(direct is not None),
        "direct_repaired": float(view["direct"]["parse"]["status"] == "repaired"),
        "direct_cut_off": float(view["direct"].get("finish_reason") == "length"),  # hit the token limit
        "direct_rows_vs_ratio": (dr - want_rows) / max(want_rows, 1.0),
        "direct_cols_match_example": float(dc == eoc),
        "direct_copy_coverage": _coverage(direct, test_in),
        "example_rows_ratio": eor / eir if eir else 0.0,
        "example_cols_ratio": eoc_sum / eic if eic else 0.0,
        "test_rows_vs_example": tir * n / eir if eir else 0.0,  # over the examples' mean input rows
        "revealed": float(len(view["rounds"])),
        "repairs_left": float(view["repairs"][len(view["chains"]) - 1 if view["chains"] else 0]
                              - max(len(view["rounds"]) - 1, 0)) if view["repairs"] else 0.0,  # []: no program
    }
    rounds = view["rounds"]
    if rounds:
        last = rounds[-1]
        out = last["test_output"]
        orr, oc = _shape(out)
        f.update({
            "last_pass": float(last["visible_pass"]),
            "last_parsed": float(last["code"] is not None),
            "last_cut_off": float(last.get("finish_reason") == "length"),
            "test_run_ok": float(last["test"]["ok"]),
            "prog_rows_vs_ratio": (orr - want_rows) / max(want_rows, 1.0) if out is not None else -1.0,
            "prog_cols_match_example": float(out is not None and oc == eoc),
            "prog_equals_direct": float(out is not None and out == direct),
            "prog_direct_agreement": _agreement(out, direct),
            "prog_copy_coverage": _coverage(out, test_in),
            "code_lines": float(len((last["code"] or "").splitlines())),
            "repeated_code": float(any(r["code"] == last["code"] for r in rounds[:-1])),
        })
        for e in ERRORS:
            f[f"err_{e}"] = float(last["visible"]["error"] == e)
    f.update(_tree_features(view, direct))
    f.update(_logprob_features(view))
    for name in absent_features(dims):
        f.pop(name, None)
    f["_dims"] = dims  # read by visible_state, never a feature
    return f


def _logprob_features(view: dict) -> dict[str, float]:
    """The model's confidence (token log-probabilities, schema v3) of the direct answer and of the
    latest revealed program, only where the trace recorded them: a feature is absent (never 0)
    for synth traces, older traces, a server that gave none, or before a program is revealed."""
    from tracegen.backends.logprobs import recorded

    f = {}
    for prefix, part in (("direct", view["direct"]), ("last", view["rounds"][-1] if view["rounds"] else None)):
        lp = recorded(part)
        if lp is not None:
            f[f"{prefix}_logprob_mean"] = float(lp["mean"])
            f[f"{prefix}_logprob_min"] = float(lp["min"])
            f[f"{prefix}_logprob_tokens"] = float(lp["tokens"])
    return f


def _tree_features(view: dict, direct) -> dict[str, float]:
    """What the tree adds: samples drawn/left, and the visible agreement between passing programs
    and with the direct answer on the new input (their outputs; never their correctness)."""
    chs, k = view["chains"], view["program_samples"]
    outs = [out for _, out in passing(view)]
    j = commit_choice(view)
    commit = view["chains"][j][-1]["test_output"] if j is not None else None
    support = sum(1 for o in outs if o == commit) if j is not None else 0
    return {
        "program_samples": float(k),
        "max_repairs": float(view["max_repairs"]),
        "samples_drawn": float(len(chs)),
        "samples_left": float(k - len(chs)) if chs else float(k),
        "generations_spent": float(sum(len(c) for c in chs)),
        "passing_programs": float(len(outs)),
        "distinct_passing_outputs": float(len({json.dumps(o) for o in outs})),
        "commit_support": float(support),
        "commit_support_share": support / len(outs) if outs else 0.0,
        "commit_equals_direct": float(commit is not None and commit == direct),
        "passing_agree_direct": float(sum(1 for o in outs if o is not None and o == direct)),
        "commit_direct_agreement": _agreement(commit, direct),
        "latest_is_commit": float(j is not None and j == len(chs) - 1),
        **_alt_features(view, commit, direct, len(outs)),
    }


def _alt_features(view: dict, commit, direct, n_passing: int) -> dict[str, float]:
    """The commit's and the runner-up output's visible shape checks, so a learner can judge
    ``PROGRAM:j`` (the first alternative) against ``PROGRAM``. Zero when there is no alternative."""
    from tracegen.records import task_test_input

    _, eir, eor, _, _, _, eoc = _geometry(view)
    tir = _shape(task_test_input(view))[0]
    want_rows = tir * eor / eir if eir else 0.0

    def shape_checks(out):
        if out is None:
            return 0.0, -1.0
        r, c = _shape(out)
        return float(c == eoc), (r - want_rows) / max(want_rows, 1.0)

    ccols, crows = shape_checks(commit)
    alts = alternative_samples(view)
    f = {"commit_cols_match_example": ccols, "commit_rows_vs_ratio": crows, "alternatives": float(len(alts)),
         "alt_support": 0.0, "alt_support_share": 0.0, "alt_equals_direct": 0.0, "alt_direct_agreement": 0.0,
         "alt_cols_match_example": 0.0, "alt_rows_vs_ratio": -1.0}
    if alts:
        alt = view["chains"][alts[0]][-1]["test_output"]
        support = sum(1 for _, o in passing(view) if o == alt)
        acols, arows = shape_checks(alt)
        f.update({"alt_support": float(support), "alt_support_share": support / max(n_passing, 1),
                  "alt_equals_direct": float(alt == direct), "alt_direct_agreement": _agreement(alt, direct),
                  "alt_cols_match_example": acols, "alt_rows_vs_ratio": arows})
    return f


FEATURE_NAMES: tuple[str, ...] = tuple(
    ["direct_parsed", "direct_repaired", "direct_rows_vs_ratio", "direct_cols_match_example",
     "direct_copy_coverage", "example_rows_ratio", "example_cols_ratio", "test_rows_vs_example",
     "revealed", "repairs_left", "last_pass", "last_parsed", "test_run_ok", "prog_rows_vs_ratio",
     "prog_cols_match_example", "prog_equals_direct", "prog_direct_agreement", "prog_copy_coverage",
     "code_lines", "repeated_code", "direct_cut_off", "last_cut_off"] + [f"err_{e}" for e in ERRORS]
)
# Features that only vary with --program-samples K > 1. A learner reads them only when its
# training states come from a tree (``features_for``), so K = 1 reproduces the pilot exactly.
TREE_FEATURE_NAMES: tuple[str, ...] = (
    "program_samples", "max_repairs", "samples_drawn", "samples_left", "generations_spent", "passing_programs",
    "distinct_passing_outputs", "commit_support", "commit_support_share", "commit_equals_direct",
    "passing_agree_direct", "commit_direct_agreement", "latest_is_commit",
    # the chosen-sample commit (PROGRAM:j): the commit's and the first alternative's checks
    "commit_cols_match_example", "commit_rows_vs_ratio", "alternatives", "alt_support", "alt_support_share",
    "alt_equals_direct", "alt_direct_agreement", "alt_cols_match_example", "alt_rows_vs_ratio")
ALL_FEATURE_NAMES = FEATURE_NAMES + TREE_FEATURE_NAMES
# Confidence features (``_logprob_features``): in ``State.features`` only where the trace recorded
# token log-probabilities, absent otherwise (a learner that reads them must handle a missing one:
# ``confidence_vector`` gives NaN, never 0); not in the names above, so learners trained on traces
# without them are unchanged.
LOGPROB_FEATURE_NAMES: tuple[str, ...] = tuple(
    f"{p}_logprob_{s}" for p in ("direct", "last") for s in ("mean", "min", "tokens"))


def confidence_vector(state) -> list[float]:
    """``LOGPROB_FEATURE_NAMES`` of a state, NaN where not recorded."""
    return [float(state.features.get(n, float("nan"))) for n in LOGPROB_FEATURE_NAMES]


def features_for(states) -> tuple[str, ...]:
    """The feature names a learner uses: the pilot's, plus the tree's when any state has K > 1, plus
    each confidence feature some state records (absent in a state: NaN to the learner, never 0)."""
    names = ALL_FEATURE_NAMES if any(s.features.get("program_samples", 1.0) > 1 for s in states) else FEATURE_NAMES
    return names + tuple(n for n in LOGPROB_FEATURE_NAMES if any(n in s.features for s in states))


def _round_status(r: dict) -> str:
    return "pass" if r["visible_pass"] else (r["visible"]["error"] or "fail")


def _num(features: dict, name: str, fmt: str) -> str:
    """A feature as ``render`` writes it; "na" where the task's values have no such shape (absent)."""
    if name not in features:
        return "na"
    v = features[name]
    return format(int(v), fmt) if fmt == "d" else format(v, fmt)


def render(view: dict, features: dict[str, float], valid: tuple[str, ...]) -> str:
    """A compact text rendering of the state for a language-model controller.

    With one program sample this is the pilot's rendering, line for line; with K > 1 it lists every
    drawn sample's rounds and the agreement of the passing programs."""
    rounds = view["rounds"]
    lines = [f"direct: {'parsed' if features['direct_parsed'] else 'unparsed'}"
             f"{' cut_off' if features['direct_cut_off'] else ''}"
             f" cols_match={_num(features, 'direct_cols_match_example', 'd')}"
             f" rows_off={_num(features, 'direct_rows_vs_ratio', '+.1f')}"
             f" copy={_num(features, 'direct_copy_coverage', '.1f')}"]
    tree = view["program_samples"] > 1
    for j, chain in enumerate(view["chains"] if tree else [rounds]):
        for r in chain:
            head = f"sample {j} " if tree else ""
            cut = " cut_off" if r.get("finish_reason") == "length" else ""
            lines.append(f"{head}round {r['round']} {r['kind']}: {_round_status(r)}{cut}")
    if rounds:
        lines.append(f"program: agrees_direct={_num(features, 'prog_direct_agreement', '.1f')}"
                     f" same={int(features['prog_equals_direct'])}"
                     f" cols_match={_num(features, 'prog_cols_match_example', 'd')}"
                     f" rows_off={_num(features, 'prog_rows_vs_ratio', '+.1f')} repeated={int(features['repeated_code'])}")
    if tree:
        lines.append(f"passing: {int(features['passing_programs'])}"
                     f" distinct={int(features['distinct_passing_outputs'])}"
                     f" commit_support={int(features['commit_support'])}"
                     f" commit_same_direct={int(features['commit_equals_direct'])}"
                     f" agree_direct={int(features['passing_agree_direct'])}")
        lines.append(f"samples: drawn={int(features['samples_drawn'])} left={int(features['samples_left'])}")
    lines.append(f"repairs_left: {int(features['repairs_left'])}")
    # every other feature the rule reads (the example's shape ratios among them), so the LoRA
    # policy sees what the rule sees; the error one-hots are the round status above
    shown = RENDERED_FEATURES | {f"err_{e}" for e in ERRORS}
    rest = [n for n in (ALL_FEATURE_NAMES if tree else FEATURE_NAMES) if n not in shown and n in features]
    lines.append("features: " + " ".join(f"{n}={features[n]:.2g}" for n in rest))
    conf = [n for n in LOGPROB_FEATURE_NAMES if n in features]
    if conf:  # only traces with token log-probabilities: the rendering of the others is unchanged
        lines.append("confidence: " + " ".join(f"{n}={features[n]:.3g}" for n in conf))
    lines.append("valid: " + " ".join(valid))
    return "\n".join(lines)


# features the lines of ``render`` above show by name (the rest go on its "features:" line)
RENDERED_FEATURES = frozenset((
    "direct_parsed", "direct_cut_off", "direct_cols_match_example", "direct_rows_vs_ratio", "direct_copy_coverage",
    "prog_direct_agreement", "prog_equals_direct", "prog_cols_match_example", "prog_rows_vs_ratio", "repeated_code",
    "passing_programs", "distinct_passing_outputs", "commit_support", "commit_equals_direct",
    "passing_agree_direct", "samples_drawn", "samples_left", "repairs_left", "last_pass",
    "last_cut_off"))


def visible_state(record: dict, revealed) -> State:
    """The state at tree position ``revealed`` (or the pilot's int step), from the visible view alone."""
    pos = as_pos(revealed)
    view = visible_view(record, pos)
    valid = valid_actions(view)
    feats = _features(view)
    absent = absent_features(feats.pop("_dims", 2))
    full = {name: float(feats.get(name, 0.0)) for name in ALL_FEATURE_NAMES if name not in absent}
    full.update({name: feats[name] for name in LOGPROB_FEATURE_NAMES if name in feats})  # absent: not recorded
    return State(record["case_id"], sum(pos), valid, full, render(view, feats, valid), pos)
