"""README's Results block, rendered from a committed study's summary.

The block between ``<!-- RESULTS START -->`` and ``<!-- RESULTS END -->`` is this function's output
for ``results/foofah/final_summary.json``, so every figure in it is the committed summary's
(``tests/house/test_readme_results.py`` checks it). Refresh it after re-running the study with
``python -m controller.report.readme``.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Mapping

from controller.env.registry import BEST_FIXED, ORACLE, ordered, repair_budget
from controller.study.provenance import primaries_heading

START, END = "<!-- RESULTS START -->", "<!-- RESULTS END -->"
STUDY = "results/foofah"
ROWS = ("direct_only", "write_once", "always_tool_visible", BEST_FIXED, "learned_rule", "lora_seq_policy", ORACLE)


def _rng(d: Mapping | None, unit: str) -> str:
    if not d or d.get("mean") is None:
        return "n/a"
    lo, hi = d["min"], d["max"]
    return f"{lo:+.1f} {unit}" if lo == hi else f"{lo:+.1f} to {hi:+.1f} {unit}"


def _tolerance(h: Mapping) -> str:
    ni = h.get("noninferiority") or {}
    if "max_losses_tolerated" not in ni:  # a summary from before the no-loss bar was recorded
        return ""
    tol = ni.get("max_losses_tolerated")
    return (f"; its no-loss bar at n = {ni['n']} tolerates " + ("no case lost (even 0 lost fails)" if tol is None else
            f"at most {tol} lost case{'s' if tol != 1 else ''} with no win"))


def results_block(s: Mapping, where: str = STUDY) -> str:
    cv = s.get("cv") or {}
    pooled = cv.get("pooled") or {}
    ss = s.get("split_seeds") or {}
    hr = (s.get("headroom") or {}).get("cells", {}).get("pooled", {})
    study = s.get("study") or {}
    k = (s.get("config") or {}).get("rollout", {}).get("program_samples", 1)
    date = str(study.get("traces_started_utc") or "")[:10] or "n/a"
    out = [f"Foofah, offline synthesizer, K = {k} (`{where}/`, traced {date}; {s.get('n_records')} files, "
           f"{hr.get('n')} scored cases in {hr.get('families')} families; claims over pooled {cv.get('k')}-fold "
           f"family cross-validation at {ss.get('n_split_seeds', 1)} split seeds, tests at the family level; "
           f"study file {study.get('registration', 'n/a')}).", ""]
    q = (s.get("headroom") or {}).get("questions") or []
    if q:
        out += [f"**What the data can answer.** {q[0]}", ""]
    ceil = s.get("ceiling") or {}
    if ceil.get("sentence"):
        out += [f"**The ceiling.** {ceil['sentence']}", ""]
    folds = [f.get("best_fixed") for f in cv.get("folds", [])]
    chosen = ", ".join(f"`{c}` in {folds.count(c)} of {len(folds)} folds" for c in dict.fromkeys(folds))
    dom = (s.get("comparators") or {}).get("dominance") or {}
    dom_text = (f" Another fixed policy dominates it pooled at {dom['dominated_seeds']} of {dom['n_seeds']} split seeds."
                if dom.get("n_seeds") else "")
    rule = ("among every repair budget and visible rule (the cheapest within the non-inferiority margin of the most "
            "accurate)" if "cheapest" in str((s.get("best_fixed") or {}).get("criterion", ""))
            else "(every repair budget and visible rule)")
    out += [f"**The best fixed policy**, chosen on each fold's train + dev {rule}: {chosen}.{dom_text}", ""]
    diffs = ss.get("differences") or {}
    out += ["| policy (pooled CV, split seed 0) | right | program generations | vs best fixed over split seeds |",
            "|---|---|---|---|"]
    budgets = [p for p in ordered(pooled) if repair_budget(p) is not None]
    for p in (*ROWS[:2], *budgets, *ROWS[2:]):
        r = pooled.get(p)
        if not r:
            continue
        d = (diffs.get(p) or {}).get(BEST_FIXED) if p != BEST_FIXED else None
        vs = f"{_rng(d.get('accuracy_pp'), 'pp')}, {_rng(d.get('program_generations'), 'generations')}" if d else ""
        if d and d["accuracy_pp"].get("holds_at", {}).get("of", 0) < ss.get("n_split_seeds", 1):
            vs += f" (split seed {cv.get('split_seed', 0)} only)"
        out.append(f"| `{p}`{' (hindsight)' if p == ORACLE else ''} | {r['exact']}/{r['n']} | "
                   f"{r['program_generations']} | {vs} |")
    out.append("")
    prim = [h for h in s.get("hypotheses") or [] if h.get("primary")]
    vs_best = [h for h in prim if BEST_FIXED in h.get("policies", [])]
    if vs_best:
        h = vs_best[0]
        beats = str(h.get("verdict", "")).startswith(("supported", "better", "cheaper"))
        said = ("cannot be shown to beat" if str(h.get("verdict", "")).startswith("undecidable")
                else "beats" if beats else "does not beat")
        out += [f"**The answer: the learned rule {said} the best fixed policy** "
                f"(`{h['name']}`: {h.get('verdict')}, supported at {h.get('supported_at') or 'n/a'} split seeds).", ""]
    if prim:
        out.append(f"**{primaries_heading(study)}** (" + (study.get("split_seed_rule") or {}).get("rule", "")
                   + "):")
        out += [f"- `{h['name']}`: {h.get('verdict')} (supported at {h.get('supported_at') or 'n/a'})"
                + _tolerance(h) + "." for h in prim]
        out.append("")
    learner = ((s.get("routing") or {}).get("cv_pooled") or {}).get("generations", {}).get("learners", {}) \
        .get("learned_rule", {})
    m = learner.get("cost_gap_recovered_matched") or {}
    if m:
        ci = m.get("ci95_family")
        val = "none" if m.get("value") is None else f"{m['value']:.2f}" + (
            f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
        out += [f"**Cost-gap recovered at matched accuracy** (share of the always-tool to oracle cost gap the "
                f"learned rule closes at always-tool's accuracy): {val}"
                + (f" ({m['reason']})" if m.get("value") is None and m.get("reason") else "") + ".", ""]
    sav = ((s.get("savings") or {}).get("cv_pooled") or {}).get("learned_rule") or {}
    parts = [f"{c.replace('_', ' ')} {v['cases']} cases ({v['generations_saved']:+d} generations, "
             f"{v['right_lost']} lost, {v['right_gained']} gained)" for c, v in sav.items() if c != "same"]
    if parts:
        out += ["**Where the rule's saving comes from** (against always-tool): " + "; ".join(parts) + ".", ""]
    reps = s.get("repair_rounds") or []
    if reps:
        out += ["Repairs (scored cases): " + "; ".join(f"repair {r['repair']} passes the public example in "
                                                       f"{r['passed']} of {r['reached']} chains that reach it"
                                                       for r in reps) + ".", ""]
    out.append("These are a search procedure's traces, not a language model's: they say nothing about a model's "
               "skill. K = 3, the library, the nulls, DAgger and routing: [docs/results.md](docs/results.md).")
    return "\n".join(out)


# The coders side by side, in the same units: (study folder, what traced it).
CODERS = (("results/foofah", "offline synthesizer"), ("results/smollm2_coder", "SmolLM2-135M-Instruct (base)"),
          ("results/smollm2_distilled", "SmolLM2-135M-Instruct distilled from the synthesizer"))
CODERS_START, CODERS_END = "<!-- CODERS START -->", "<!-- CODERS END -->"


def coders_block(summaries: Mapping[str, Mapping]) -> str:
    """One row per committed coder study (pooled CV): cases right and program generations of the
    direct answer, always-tool, the best fixed policy, the learned rule and the oracle, and the
    first primary's verdict. ``summaries``: {study folder: final summary}, in ``CODERS`` order."""
    names = dict(CODERS)
    cols = ("direct_only", "always_tool_visible", BEST_FIXED, "learned_rule", ORACLE)
    out = ["| coder (study) | scored cases (families) | " + " | ".join(f"`{c}`" for c in cols)
           + " | first registered primary |", "|---" * (len(cols) + 3) + "|"]
    for where, s in summaries.items():
        pooled = (s.get("cv") or {}).get("pooled") or {}
        hr = (s.get("headroom") or {}).get("cells", {}).get("pooled", {})
        cells = [f"{pooled[c]['exact']}/{pooled[c]['n']}, {pooled[c]['program_generations']}" if c in pooled else "n/a"
                 for c in cols]
        prim = next((h for h in s.get("hypotheses") or [] if h.get("primary")), None)
        verdict = f"`{prim['name']}`: {prim.get('verdict')} ({prim.get('supported_at') or 'n/a'} split seeds)" \
            if prim else "n/a"
        out.append(f"| {names.get(where, where)} (`{where}/`) | {hr.get('n')} ({hr.get('families')}) | "
                   + " | ".join(cells) + f" | {verdict} |")
    return ("Every committed coder on Foofah, in the same units (pooled family cross-validation, split seed 0; "
            "each cell: cases right / scored, program generations):\n\n" + "\n".join(out))


# The default quickstart's own run (``live-tool-dagger --generate-traces --train-lora``): its summary and config.
QUICKSTART = "results/quickstart"
QUICKSTART_START, QUICKSTART_END = "<!-- QUICKSTART START -->", "<!-- QUICKSTART END -->"


def quickstart_block(s: Mapping, where: str = QUICKSTART) -> str:
    """The table the quickstart prints at its end, from its committed summary, with when and at which commit."""
    from controller.report.fmt import policy_table

    when = str((s.get("study") or {}).get("traces_started_utc") or "")[:10] or "n/a"
    commit = str((s.get("versions") or {}).get("git_commit") or "n/a")[:7]
    return (f"A healthy quickstart ends with this table (dev and test cases right, test program generations and "
            f"repairs; the run of {when} with the code at `{commit}`, its summary and config in `{where}/`):\n\n"
            f"```text\n{policy_table(s)}\n```")


def replace_block(readme: str, block: str, start: str = START, end: str = END) -> str:
    pat = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pat.search(readme):
        raise ValueError(f"README has no {start} ... {end} block")
    return pat.sub(lambda _m: f"{start}\n{block}\n{end}", readme)


def read_block(readme: str, start: str = START, end: str = END) -> str:
    m = re.search(re.escape(start) + r"\n(.*?)\n" + re.escape(end), readme, re.S)
    return m.group(1) if m else ""


def coder_summaries(root: Path) -> dict:
    return {w: json.loads((root / w / "final_summary.json").read_text())
            for w, _ in CODERS if (root / w / "final_summary.json").exists()}


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(allow_abbrev=False, prog="python -m controller.report.readme",
                                 description="Render README's Results blocks and docs/results.md's from the committed "
                                             "studies' summaries.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("root", nargs="?", default=".", help="the checkout whose README.md and results/ are read")
    root_p = Path(ap.parse_args(argv).root)
    path, study = root_p / "README.md", root_p / STUDY / "final_summary.json"
    at = study
    try:  # nothing is written on an error: README stays as it was
        summary = json.loads(study.read_text())
        at = path
        text = replace_block(path.read_text(), results_block(summary))
        text = replace_block(text, coders_block(coder_summaries(root_p)), CODERS_START, CODERS_END)
        at = root_p / QUICKSTART / "final_summary.json"
        text = replace_block(text, quickstart_block(json.loads(at.read_text())), QUICKSTART_START, QUICKSTART_END)
        from controller.report import results_doc

        doc_path = at = root_p / results_doc.DOC
        doc = results_doc.render(doc_path.read_text(), results_doc.load(root_p))
    except OSError as err:
        print(f"error: {err.filename or at}: {err.strerror or err}", file=sys.stderr)
        return 2
    except ValueError as err:  # not JSON, or a README (or docs/results.md) without its markers
        print(f"error: {at}: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    path.write_text(text)
    doc_path.write_text(doc)
    print(f"{path}: Results blocks rendered from {STUDY}/final_summary.json, the coder studies and {QUICKSTART}/; "
          f"{doc_path}: its blocks from the studies under results/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
