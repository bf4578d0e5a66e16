"""docs/results.md's figures, rendered from the committed studies' summaries.

Every figure of docs/results.md sits between ``<!-- RESULTS:<name> START -->`` and
``<!-- RESULTS:<name> END -->``: the output of ``BLOCKS[name]`` over ``results/*/final_summary.json``
(and each study's ``at_registration/final_summary.json.gz``); the prose around them holds none
(``tests/house/test_results_doc.py`` checks both). Refresh after re-running a study with
``python -m controller.report.readme`` (it renders README's blocks and these).
"""
from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Callable, Mapping

from controller.env.registry import BEST_FIXED, ORACLE
from controller.report.fmt import cases_have

DOC = "docs/results.md"
STUDIES = (("results/foofah", "Foofah K = 1"), ("results/foofah_k3", "Foofah K = 3"), ("results/library", "library"))
LORA_SMOLLM2 = "results/foofah_lora_smollm2"
AT_REG = "at_registration/final_summary.json.gz"
TOOL = "always_tool_visible"


def load(root: Path) -> dict[str, Mapping]:
    """{study folder: summary}, and {folder/at_registration: summary} where one is committed."""
    out: dict[str, Mapping] = {}
    for where in (*(w for w, _ in STUDIES), LORA_SMOLLM2):
        path = root / where / "final_summary.json"
        if path.exists():
            out[where] = json.loads(path.read_text())
        if (root / where / AT_REG).exists():
            with gzip.open(root / where / AT_REG, "rt") as f:
                out[f"{where}/at_registration"] = json.load(f)
    return out


def _studies(ss: Mapping) -> list[tuple[str, str, Mapping]]:
    return [(w, label, ss[w]) for w, label in STUDIES if w in ss]


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(head: list[str], rows: list[list]) -> list[str]:
    return [_row(head), _row(["---"] * len(head)), *(_row(r) for r in rows)]


def _pooled(s: Mapping, p: str) -> Mapping:
    return ((s.get("cv") or {}).get("pooled") or {}).get(p) or {}


def _rg(p: Mapping) -> str:
    """right / program generations of a pooled result."""
    return f"{p['exact']} / {p['program_generations']}" if p else "n/a"


def _span(d: Mapping | None, unit: str, nd: int = 1) -> str:
    if not d or d.get("min") is None:
        return "n/a"
    lo, hi = d["min"], d["max"]
    return f"{lo:+.{nd}f} {unit}" if lo == hi else f"{lo:+.{nd}f} to {hi:+.{nd}f} {unit}"


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _folds(s: Mapping) -> str:
    c = Counter(f.get("best_fixed") for f in (s.get("cv") or {}).get("folds", []))
    return ", ".join(f"`{p}` {n}" for p, n in c.most_common()) or "n/a"


def scope(ss: Mapping) -> str:
    rows = []
    for w, label, s in _studies(ss):
        st, hr = s.get("study") or {}, (s.get("headroom") or {}).get("cells", {}).get("pooled", {})
        rule = (st.get("split_seed_rule") or {})
        rows.append([f"{label} (`{w}/`)", str(st.get("traces_started_utc") or "n/a")[:16].replace("T", " "),
                     st.get("registration", "n/a"), f"{hr.get('n')} ({hr.get('families')})",
                     f"{(s.get('cv') or {}).get('k')}-fold, {(s.get('split_seeds') or {}).get('n_split_seeds', 1)} split seeds",
                     f">= {rule.get('min_supported', 'n/a')} of {rule.get('of', 'n/a')}"])
    return "\n".join(_table(["study", "traces started (UTC)", "registration", "scored cases (families)",
                             "cross-validation", "supported at"], rows))


def headroom(ss: Mapping) -> str:
    rows, lines = [], []
    for w, label, s in _studies(ss):
        h = s.get("headroom") or {}
        cell, gap = h.get("cells", {}).get("pooled", {}), h.get("gap", {}).get("cv_pooled", {})
        at, orc = _pooled(s, TOOL), _pooled(s, ORACLE)
        rows.append([f"{label} (`{w}/`)", cell.get("n"), cell.get("accuracy_headroom_cases"), at.get("exact"),
                     orc.get("exact"), f"{at.get('program_generations')} / {orc.get('program_generations')}",
                     gap.get("accuracy_gap")])
        reps = s.get("repair_rounds") or []
        if reps:
            lines.append(f"- {label}: " + "; ".join(f"repair {r['repair']} passes the public example in {r['passed']} "
                                                    f"of {r['reached']} chains that reach it" for r in reps) + ".")
        cas = (s.get("commit_any_sample") or {}).get("splits") or {}
        if cas and (s.get("commit_any_sample") or {}).get("k", 1) > 1:
            lines.append(f"- {label}: committing any passing sample instead of the majority's wins "
                         + ", ".join(f"{v.get('gained')} of {v.get('n')} {k} cases" for k, v in cas.items())
                         + " for the hindsight oracle (`commit_any_sample`).")
    return "\n".join(_table(["study", "scored cases", "cases always-tool can lose and another policy win",
                             "always-tool right", "oracle right", "always-tool / oracle generations",
                             "oracle - always-tool (cases, pooled CV)"], rows) + ["", "Repairs (scored cases):", *lines])


def ceiling(ss: Mapping) -> str:
    out = []
    for w, label, s in _studies(ss):
        c = s.get("ceiling") or {}
        if not c.get("points"):
            continue
        auc = {(x.get("model"), x.get("point")): x.get("auc") for x in c.get("separability") or []}
        models = list(dict.fromkeys(m for m, _ in auc))
        rows = [[p.get("name"), p.get("cases"), p.get("safe"), p.get("savings_if_all_safe_stop"),
                 _pct(p.get("gap_share_if_all_safe_stop")),
                 " / ".join("n/a" if auc.get((m, p.get("point"))) is None else f"{auc[(m, p.get('point'))]:.2f}"
                            for m in models)]
                for p in c["points"]]
        out += [f"**{label}** (`{w}/`): {c.get('n')} cases of {c.get('families')} families; always-tool spends "
                f"{c.get('always_tool_generations')} program generations, a gap of {c.get('gap_generations')} to "
                f"stopping each case at its earliest safe point; {cases_have(c.get('commit_direct_wins'))} the direct "
                "answer right and the committed program wrong.", ""]
        out += _table(["decision point", "cases", "safe to stop", "saved if every safe case stops there",
                       "share of gap", f"out-of-family AUC ({' / '.join(models)})"], rows)
        ins = c.get("in_sample") or []
        oos = c.get("out_of_sample") or []
        rc = c.get("risk_controlled") or []
        out += ["", f"In-sample at zero lost cases, trees of depth {ins[0].get('depth')}-{ins[-1].get('depth')} recover "
                + " / ".join(_pct(x.get("gap_share")) for x in ins) + " of the gap." if ins else "",
                "Out of family: " + "; ".join(f"{x.get('model')} saves {_pct(x.get('gap_share'))} losing "
                                              f"{x.get('lost')} case{'s' if x.get('lost') != 1 else ''}"
                                              for x in oos) + "." if oos else "",
                "Risk-controlled (Learn-Then-Test on the inner folds): " + "; ".join(
                    f"{x.get('model')} saves {_pct(x.get('gap_share'))} ({x.get('lost')} lost)" for x in rc) + "." if rc else "",
                f"**{c['sentence']}**" if c.get("sentence") else "", ""]
    return "\n".join(line for line in out).strip()


def best_fixed(ss: Mapping) -> str:
    rows, notes = [], []
    for w, label, s in _studies(ss):
        for key, name in ((w, label), (f"{w}/at_registration", None)):
            t = ss.get(key)
            if not t:
                continue
            commit = ((t.get("versions") or {}).get("git_commit") or "")[:7]
            rows.append([label if name else f"{label}, at `{commit}` (`{w}/at_registration/`)", _folds(t),
                         _rg(_pooled(t, BEST_FIXED)), _rg(_pooled(t, "repair_at_most_1")), _rg(_pooled(t, TOOL))])
        dom = (s.get("comparators") or {}).get("dominance") or {}
        prim = next((h for h in s.get("hypotheses") or [] if h.get("primary") and BEST_FIXED in h.get("policies", [])), {})
        ni = prim.get("noninferiority") or {}
        if dom.get("n_seeds") or "max_losses_tolerated" in ni:
            notes.append(f"- {label}: another fixed policy dominates `best_fixed` pooled at {dom.get('dominated_seeds', 'n/a')} "
                         f"of {dom.get('n_seeds', 'n/a')} split seeds; at n = {ni.get('n', 'n/a')} and margin "
                         f"{ni.get('margin', 'n/a')} the exact non-inferiority bound tolerates "
                         + ("no lost case" if ni.get("max_losses_tolerated") is None else
                            f"{ni['max_losses_tolerated']} lost cases with no win") + ".")
    return "\n".join(_table(["study", "chosen per fold (split seed 0)", "`best_fixed`", "`repair_at_most_1`",
                             "always-tool"], rows) + ["", "(right / program generations, pooled CV.)", *notes])


def _claim(s: Mapping, h: Mapping) -> str:
    text = f"{h.get('verdict')} ({h.get('supported_at') or 'n/a'} split seeds)"
    pol = h.get("policies") or []
    if len(pol) == 2 and pol[1] == BEST_FIXED:
        d = ((s.get("split_seeds") or {}).get("differences") or {}).get(pol[0], {}).get(BEST_FIXED)
        a, b = _pooled(s, pol[0]), _pooled(s, BEST_FIXED)
        text += (f"; at split seed {(s.get('cv') or {}).get('split_seed', 0)} {_rg(a)} vs {_rg(b)} (right / generations)")
        if d:
            text += (f"; over split seeds {_span(d.get('accuracy_pp'), 'pp')} and "
                     f"{_span(d.get('program_generations'), 'generations', 0)} against `best_fixed`")
        ni = h.get("noninferiority") or {}
        if ni.get("lower_bound") is not None:
            text += f"; exact lower bound of the difference {100 * ni['lower_bound']:+.1f} pp"
    return text


def hypotheses(ss: Mapping, primary: bool) -> str:
    studies = _studies(ss)
    names = list(dict.fromkeys(h["name"] for _, _, s in studies for h in s.get("hypotheses") or []
                               if bool(h.get("primary")) == primary))
    rows = []
    for n in names:
        cells = []
        for _, _, s in studies:
            h = next((x for x in s.get("hypotheses") or [] if x["name"] == n), None)
            cells.append(_claim(s, h) if h else "not in this study")
        rows.append([f"`{n}`", *cells])
    return "\n".join(_table(["hypothesis", *(label for _, label, _ in studies)], rows))


def learners(ss: Mapping) -> str:
    out = []
    for w, label, s in _studies(ss):
        r = ((s.get("routing") or {}).get("cv_pooled") or {}).get("generations", {}).get("learners", {})
        rule = r.get("learned_rule") or {}
        m = rule.get("cost_gap_recovered_matched") or {}
        ap = (rule.get("apgr") or {})
        val = "undefined" if m.get("value") is None else f"{m['value']:.2f}"
        line = f"- {label}: cost-gap recovered at matched accuracy {val}" + (
            f" ({m['reason']})" if m.get("value") is None and m.get("reason") else "")
        lv = (ap.get("learner") or {})
        if lv.get("value") is not None:
            sp = lv.get("spread95_family")
            line += (f"; APGR {lv['value']:.2f}" + (f" [{sp[0]:.2f}, {sp[1]:.2f}]" if sp else "")
                     + f" (a random router scores {ap.get('random_router')})")
        lora = _pooled(s, "lora_seq_policy")
        if lora:
            base = (((s.get("config") or {}).get("experiment") or {}).get("lora") or {}).get("base_model") or "tiny"
            line += f"; the LoRA policy ({base} base, split seed {(s.get('cv') or {}).get('split_seed', 0)}) {_rg(lora)}"
        out.append(line + ".")
        sav = ((s.get("savings") or {}).get("cv_pooled") or {}).get("learned_rule") or {}
        if sav and w == STUDIES[0][0]:
            out.append(f"- Where the rule's saving comes from ({label}, pooled CV, against always-tool): " + "; ".join(
                f"{k.replace('_', ' ')} {v['cases']} cases ({v['generations_saved']:+d} generations, {v['right_lost']} "
                f"lost, {v['right_gained']} gained)" for k, v in sav.items() if k != "same")
                + f"; {(sav.get('same') or {}).get('cases', 0)} cases act exactly like always-tool.")
    return "\n".join(out)


NULLS = (TOOL, BEST_FIXED, "learned_rule", "majority_action", "learned_rule_shuffled", "lora_seq_policy",
         "lora_shuffled_seq", "learned_rule_dagger", "lora_dagger", "nested_rule", "cross_check", "resample_visible")


def nulls(ss: Mapping) -> str:
    studies = _studies(ss)
    rows = []
    for p in NULLS:
        cells = []
        for _, _, s in studies:
            t = ((s.get("policy_results") or {}).get(p) or {}).get("test")
            cells.append(f"{t['exact']}/{t['n']}, {t['program_generations']}" if t else "-")
        if any(c != "-" for c in cells):
            rows.append([f"`{p}`", *cells])
    return "\n".join(_table(["policy (test split: right, program generations)", *(label for _, label, _ in studies)],
                            rows))


def rerun(ss: Mapping) -> str:
    out = []
    for w, label, s in _studies(ss):
        r = (s.get("deviations") or {}).get("rerun")
        if not r:
            continue
        out += [f"**{label}** re-analysed at `{r['commit']}` (`{r['path']}`): {r['changed_primaries']} primary and "
                f"{r['changed_secondaries']} secondary verdict(s) differ in their word.", ""]
        if r["changed_primaries"] or r["changed_secondaries"] or w == STUDIES[0][0]:
            out += _table(["hypothesis", "primary", f"at `{r['commit']}`", "now"],
                          [[f"`{x['name']}`", "yes" if x["primary"] else "no",
                            x["then"] if x["same"] else f"**{x['then']}**", x["now"]] for x in r["rows"]]) + [""]
        then = ss.get(f"{w}/at_registration")
        if then:
            out += [f"Pooled at split seed 0, `learned_rule` {_rg(_pooled(then, 'learned_rule'))} then and "
                    f"{_rg(_pooled(s, 'learned_rule'))} now; `best_fixed` {_rg(_pooled(then, BEST_FIXED))} then "
                    f"({_folds(then)}) and {_rg(_pooled(s, BEST_FIXED))} now ({_folds(s)}).", ""]
    return "\n".join(out).strip()


def lora_smollm2(ss: Mapping) -> str:
    s = ss.get(LORA_SMOLLM2)
    if not s:
        return "(no committed study)"
    lc = ((s.get("config") or {}).get("experiment") or {}).get("lora") or {}
    runs = {**(s.get("lora_training") or {}), **((s.get("cv") or {}).get("lora_training") or {})}
    secs = [r["train_s"] for r in runs.values() if r.get("train_s") is not None]
    mem = [r["peak_rss_mb"] for r in runs.values() if r.get("peak_rss_mb") is not None]
    test = ((s.get("policy_results") or {}).get("lora_seq_policy") or {}).get("test") or {}
    return (f"`{LORA_SMOLLM2}/` (base `{lc.get('base_model')}`, last {lc.get('lora_layers')} layers, {lc.get('max_steps')} "
            f"steps): the LoRA policy {_rg(_pooled(s, 'lora_seq_policy'))} pooled (right / program generations; "
            f"always-tool {_rg(_pooled(s, TOOL))}, `best_fixed` {_rg(_pooled(s, BEST_FIXED))}), "
            f"{test.get('exact')}/{test.get('n')} at {test.get('program_generations')} generations on test; "
            f"{len(secs)} trainings of {min(secs, default=0):.0f}-{max(secs, default=0):.0f} s, peak memory "
            f"{max(mem, default=0) / 1024:.1f} GiB; {(s.get('split_seeds') or {}).get('n_split_seeds', 1)} split seed(s).")


BLOCKS: dict[str, Callable[[Mapping], str]] = {
    "scope": scope, "headroom": headroom, "ceiling": ceiling, "best_fixed": best_fixed,
    "primaries": lambda ss: hypotheses(ss, True), "secondaries": lambda ss: hypotheses(ss, False),
    "learners": learners, "nulls": nulls, "rerun": rerun, "lora_smollm2": lora_smollm2}


def markers(name: str) -> tuple[str, str]:
    return f"<!-- RESULTS:{name} START -->", f"<!-- RESULTS:{name} END -->"


def render(doc: str, ss: Mapping) -> str:
    """``doc`` with every block replaced by its rendering; a block missing from ``doc`` is an error."""
    for name, fn in BLOCKS.items():
        start, end = markers(name)
        pat = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
        if not pat.search(doc):
            raise ValueError(f"{DOC} has no {start} ... {end} block")
        doc = pat.sub(lambda _m: f"{start}\n{fn(ss)}\n{end}", doc)
    return doc


def prose(doc: str) -> str:
    """``doc`` without its rendered blocks, headings, code spans and link targets: what must hold no figure."""
    for name in BLOCKS:
        start, end = markers(name)
        doc = re.sub(re.escape(start) + r".*?" + re.escape(end), "", doc, flags=re.S)
    doc = re.sub(r"^#.*$", "", doc, flags=re.M)
    doc = re.sub(r"`[^`]*`", "", doc)
    doc = re.sub(r"\]\([^)]*\)", "]", doc)
    doc = re.sub(r"\bsection \d+b?\b", "section", doc)  # cross-references, not figures
    return re.sub(r"\bK = \d\b", "K", doc)
