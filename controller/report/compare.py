"""Two runs on the same cases, side by side (``live-tool-dagger compare ROOT_A ROOT_B``).

For every policy both runs hold, on one split (the held-out ``test`` by default): accuracy and
tool cost (program generations, repair actions) in A and in B, the difference B - A with a
family-level interval and test, and every case whose outcome (``correct``) differs. The numbers
come from each run's ``predictions/<policy>.jsonl``; the runs' descriptions from
``final_summary.json`` and ``run_config.json``.

The same cases: the split's case ids must be identical for every shared policy, and when both
runs recorded the case-set digest (``run_config.json`` ``trace_config.case_set``, a hash of
every case's id, tables and hidden answer) the digests must be equal too. Anything else is
refused (``DifferentCaseSets``) before anything is written.

The interval is the house's family cluster bootstrap (``controller.study.stats.family_bootstrap``)
of the paired per-case differences, the p-value its family sign-flip test, Holm-adjusted over the
policies' distinct comparisons, the verdict decided by that adjusted p alone (as in the summary's
``paired_tests``). This module only calls those statistics; it computes none of its own.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

from controller.report.runs import Run, RunFilesError, describe, esc, href, model_text, page

SPLITS = ("test", "dev", "train", "all")
COSTS = ("program_generations", "repair_actions")
METHOD = ("paired family cluster bootstrap (families resampled with replacement, the pooled mean of the "
          "per-case differences B - A over their cases; percentile 95% interval); p: sign-flip permutation test on "
          "the per-family sums, Holm-adjusted over the policies' distinct comparisons")


class DifferentCaseSets(RunFilesError):
    """The two runs are not over the same cases."""


# ----------------------------------------------------------------------------- the comparison


def split_rows(run: Run, policy: str, split: str) -> dict[str, dict]:
    path = run.reports / "predictions" / f"{policy}.jsonl"
    rows: dict[str, dict] = {}
    for r in run.predictions(policy):
        if split == "all" or r["split"] == split:
            if r["case_id"] in rows:
                raise RunFilesError(f"{path}: case {r['case_id']!r} appears in two splits")
            rows[r["case_id"]] = r
    return rows


def check_digests(a: Run, b: Run) -> str:
    da = ((a.run_config or {}).get("trace_config") or {}).get("case_set")
    db = ((b.run_config or {}).get("trace_config") or {}).get("case_set")
    if da and db and da != db:
        raise DifferentCaseSets(f"{a.root} and {b.root} are over different case sets: run_config.json "
                                f"trace_config.case_set {da} vs {db} (the cases' ids, tables or answers differ)")
    return f"case-set digest {da} in both" if da and db else "case-set digest not recorded in both runs: ids only"


def ids_of(split: str) -> str:
    return "case ids (every split)" if split == "all" else f"{split} case ids"


def check_ids(a: Run, b: Run, policy: str, split: str, ra: dict, rb: dict) -> None:
    if set(ra) == set(rb):
        return
    only_a, only_b = sorted(set(ra) - set(rb)), sorted(set(rb) - set(ra))
    say = lambda ids, who: f"{len(ids)} only in {who}" + (f" (e.g. {ids[0]!r})" if ids else "")
    raise DifferentCaseSets(f"{a.root} and {b.root} are over different case sets: the {ids_of(split)} of "
                            f"{policy} differ ({say(only_a, 'A')}; {say(only_b, 'B')})")


def side(rows: dict[str, dict]) -> dict:
    scored = [r for r in rows.values() if r["correct"] is not None]
    exact = sum(bool(r["correct"]) for r in scored)
    return {"n": len(scored), "exact": exact, "accuracy": exact / len(scored) if scored else None,
            "n_cases": len(rows), **{c: sum(r[c] for r in rows.values()) for c in COSTS}}


def paired(ra: dict, rb: dict, *, seed: int, n_resamples: int) -> tuple[dict, tuple]:
    """B - A on one policy: accuracy over the cases scored in both, costs over every case."""
    from controller.study.stats import comparison_key, family_bootstrap, family_sign_flip_p

    ids = sorted(ra)
    both = [i for i in ids if ra[i]["correct"] is not None and rb[i]["correct"] is not None]
    fams = [ra[i]["family"] for i in both]
    d = [float(rb[i]["correct"]) - float(ra[i]["correct"]) for i in both]
    out = {"n": len(both), "n_families": len(set(fams)), "b_wins": sum(x > 0 for x in d),
           "b_losses": sum(x < 0 for x in d), "accuracy": sum(d) / len(d) if d else None,
           "accuracy_ci95_family": family_bootstrap(fams, d, n_resamples=n_resamples, seed=seed),
           "p_family": family_sign_flip_p(fams, d, seed=seed) if d else None}
    all_fams = [ra[i]["family"] for i in ids]
    for c in COSTS:
        dc = [float(rb[i][c] - ra[i][c]) for i in ids]
        out[c] = int(sum(dc))
        out[f"{c}_per_case"] = sum(dc) / len(dc) if dc else None
        out[f"{c}_per_case_ci95_family"] = family_bootstrap(all_fams, dc, n_resamples=n_resamples, seed=seed)
    return out, comparison_key(fams, d)


def differing(ra: dict, rb: dict) -> list[dict]:
    """The cases whose ``correct`` differs between the runs, by case id."""
    return [{"case_id": i, "family": ra[i]["family"], "a_correct": ra[i]["correct"], "b_correct": rb[i]["correct"],
             "a_actions": ra[i].get("actions"), "b_actions": rb[i].get("actions"),
             "a_cost": {c: ra[i][c] for c in COSTS}, "b_cost": {c: rb[i][c] for c in COSTS}}
            for i in sorted(ra) if ra[i]["correct"] != rb[i]["correct"]]


def _flat(d, prefix=""):
    for k, v in (d or {}).items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


PER_RUN = ("experiment.lora.cache_dir", "experiment.adapters_dir")  # paths under each run's own root


def settings_diff(a: Run, b: Run) -> list[dict]:
    """The ``config`` entries of the two summaries that differ, each run's own paths left out."""
    fa, fb = dict(_flat(a.summary.get("config"))), dict(_flat(b.summary.get("config")))
    return [{"key": k, "a": fa.get(k), "b": fb.get(k)} for k in list(fa) + [k for k in fb if k not in fa]
            if fa.get(k) != fb.get(k) and k not in PER_RUN]


def compare_runs(a: Run, b: Run, *, split: str = "test", seed: int = 0, n_resamples: int = 2000) -> dict:
    """Everything ``compare.json`` holds. Raises ``DifferentCaseSets`` for runs over different
    cases and ``RunFilesError`` for a missing or invalid file."""
    from controller.env.registry import ordered
    from controller.study.stats import EXCLUDE_TIE, distinct_holm, verdict

    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {SPLITS}")
    pa, pb = a.summary["policy_results"], b.summary["policy_results"]
    shared = [p for p in ordered(pa) if p in pb]
    if not shared:
        raise RunFilesError(f"{a.root} and {b.root} share no policy")
    digest = check_digests(a, b)
    policies, keys, ps = {}, [], []
    for p in shared:
        ra, rb = split_rows(a, p, split), split_rows(b, p, split)
        check_ids(a, b, p, split, ra, rb)
        diff, key = paired(ra, rb, seed=seed, n_resamples=n_resamples)
        policies[p] = {"a": side(ra), "b": side(rb), "diff": diff, "differing": differing(ra, rb)}
        keys.append(key)
        ps.append(diff["p_family"] if diff["p_family"] is not None else 1.0)
    excluded = [None if k else EXCLUDE_TIE for k in keys]
    adjusted, _ = distinct_holm(keys, ps, excluded)
    size = len({k for k in keys if k})
    for (p, entry), p_adj, why in zip(policies.items(), adjusted, excluded):
        entry["diff"].update(p_holm=p_adj, holm_family_size=size, verdict=verdict(entry["diff"]["accuracy"], p_adj),
                             **({"holm_excluded": why} if why else {}))
    first = next(iter(policies.values()))
    fams = {r["family"] for r in split_rows(a, shared[0], split).values()}
    return {
        "a": describe(a), "b": describe(b), "split": split,
        "n_cases": first["a"]["n_cases"], "n_scored": first["diff"]["n"], "n_families": len(fams),
        "same_cases": f"the {ids_of(split)} are identical for every shared policy; {digest}",
        "settings_differ": settings_diff(a, b),
        "interval": {"method": METHOD, "level": 0.95, "seed": seed, "n_resamples": n_resamples,
                     "direction": "B - A", "verdict": "better / worse: B against A, at the Holm-adjusted family p < 0.05"},
        "policies": policies,
        "only_in_a": [p for p in ordered(pa) if p not in pb], "only_in_b": [p for p in ordered(pb) if p not in pa],
    }


def default_out(a: Run, b: Run) -> Path:
    return a.reports / f"compare_{re.sub(r'[^A-Za-z0-9._-]', '_', b.name)}"


# ----------------------------------------------------------------------------- compare.md


def md_code(x) -> str:
    """Text as inline code that survives a table cell: pipes escaped, backticks fenced."""
    t = str(x).replace("\n", " ").replace("|", "\\|")
    return f"`` {t} ``" if "`" in t else f"`{t}`"


def share(s: dict) -> str:
    return f"{s['exact']}/{s['n']}" + (f" ({100 * s['accuracy']:.1f}%)" if s["accuracy"] is not None else "")


def diff_text(d: dict) -> str:
    from controller.report.fmt import ci_pct, pp

    return f"{pp(d['accuracy'])} {ci_pct(d['accuracy_ci95_family'])}" if d["accuracy"] is not None else "n/a"


def cases_text(res: dict) -> str:
    scored = f" ({res['n_scored']} scored)" if res["n_scored"] != res["n_cases"] else ""
    return f"{res['n_cases']} cases{scored} in {res['n_families']} families"


def outcome(x) -> str:
    return "unscored" if x is None else "right" if x else "wrong"


def cost(c: dict) -> str:
    return f"{c['program_generations']} / {c['repair_actions']}"


def run_rows(res: dict) -> list[tuple[str, str, str]]:
    a, b = res["a"], res["b"]
    get = lambda i, k: "n/a" if i.get(k) is None else str(i[k])
    return [("run", a["root"], b["root"]),
            ("case set", f"{a['case_set']} ({get(a, 'case_set_digest')}, {get(a, 'n_records')} records)",
             f"{b['case_set']} ({get(b, 'case_set_digest')}, {get(b, 'n_records')} records)"),
            ("backend / model", model_text(a), model_text(b)),
            ("max repairs / program samples", f"{get(a, 'max_repairs')} / {get(a, 'program_samples')}",
             f"{get(b, 'max_repairs')} / {get(b, 'program_samples')}"),
            ("traces started (UTC)", a["date"], b["date"]),
            ("git commit", get(a, "git_commit")[:12], get(b, "git_commit")[:12])]


def policy_cells(p: str, e: dict) -> list[str]:
    from controller.report.fmt import p_value

    d = e["diff"]
    return [share(e["a"]), share(e["b"]), diff_text(d), f"{p_value(d['p_family'])} / {p_value(d['p_holm'])}",
            d["verdict"], f"{e['a']['program_generations']} → {e['b']['program_generations']} ({d['program_generations']:+d})",
            f"{e['a']['repair_actions']} → {e['b']['repair_actions']} ({d['repair_actions']:+d})", str(len(e["differing"]))]


POLICY_HEADERS = ["A right", "B right", "B − A [95% CI, family bootstrap]", "p family / Holm", "verdict (B vs A)",
                  "generations A → B", "repairs A → B", "differing cases"]


def compare_markdown(res: dict) -> str:
    from controller.report.fmt import table

    lines = ["# Comparing two runs", ""]
    lines += table(["", "A", "B"], [[k, md_code(x) if k == "run" else x, md_code(y) if k == "run" else y]
                                    for k, x, y in run_rows(res)])
    if res["settings_differ"]:
        lines += ["Settings that differ (the summaries' `config`): " + "; ".join(
            f"{md_code(s['key'])} {md_code(s['a'])} → {md_code(s['b'])}" for s in res["settings_differ"]) + ".", ""]
    lines += [f"Split `{res['split']}`: {cases_text(res)}, the same in both runs "
              f"({res['same_cases']}). Differences are B − A; interval and test: {res['interval']['method']} "
              f"(seed {res['interval']['seed']}, {res['interval']['n_resamples']} resamples).", ""]
    lines += ["## Accuracy and tool cost per policy", ""]
    lines += table(["Policy"] + POLICY_HEADERS, [[md_code(p)] + policy_cells(p, e) for p, e in res["policies"].items()])
    for who in ("a", "b"):
        if res[f"only_in_{who}"]:
            lines += [f"Only in {who.upper()}: " + ", ".join(map(md_code, res[f"only_in_{who}"])) + ".", ""]
    lines += ["## Cases whose outcome differs", ""]
    any_diff = False
    for p, e in res["policies"].items():
        if not e["differing"]:
            continue
        any_diff = True
        lines += [f"### {md_code(p)} ({len(e['differing'])})", ""]
        lines += table(["Case", "Family", "A", "B", "A generations / repairs", "B generations / repairs"],
                       [[md_code(c["case_id"]), md_code(c["family"]), outcome(c["a_correct"]), outcome(c["b_correct"]),
                         cost(c["a_cost"]), cost(c["b_cost"])] for c in e["differing"]])
    if not any_diff:
        lines += ["None: every shared policy gets the same cases right in both runs.", ""]
    return "\n".join(lines).rstrip() + "\n"


# ----------------------------------------------------------------------------- compare.html


def case_link(run: dict, c: dict, side_: str, page_dir: Path) -> str:
    """The outcome of case ``c`` in one run, linking that case in the run's viewer."""
    right = c[f"{side_}_correct"]
    cls = "muted" if right is None else "right" if right else "wrong"
    if not run["viewer"]:
        return f'<span class="{cls}">{esc(outcome(right))}</span> <span class="muted">(no viewer)</span>'
    url = href(run["viewer"], page_dir, "#case/" + quote(c["case_id"], safe=""))
    return f'<a class="{cls} case-{side_}" href="{url}" data-case="{esc(c["case_id"])}">{esc(outcome(right))}</a>'


def html_runs(res: dict, page_dir: Path) -> list[str]:
    out = ['<table id="runs"><thead><tr><th></th><th>A</th><th>B</th></tr></thead><tbody>']
    for k, x, y in run_rows(res):
        cells = [esc(v) for v in (x, y)]
        if k == "run":
            cells = [f"<code>{esc(v)}</code>" + (f' · <a href="{href(i["viewer"], page_dir)}">viewer</a>'
                                                 if i["viewer"] else "") for v, i in ((x, res["a"]), (y, res["b"]))]
        out.append(f"<tr><th>{esc(k)}</th><td>{cells[0]}</td><td>{cells[1]}</td></tr>")
    out.append("</tbody></table>")
    if res["settings_differ"]:
        out.append("<p>Settings that differ: " + "; ".join(
            f"<code>{esc(s['key'])}</code> <code>{esc(s['a'])}</code> → <code>{esc(s['b'])}</code>"
            for s in res["settings_differ"]) + ".</p>")
    out.append(f"<p>Split <code>{esc(res['split'])}</code>: {esc(cases_text(res))}, "
               f"the same in both runs. Differences are B − A; {esc(res['interval']['method'])}.</p>")
    return out


def html_policies(res: dict) -> list[str]:
    out = ['<h2>Accuracy and tool cost per policy</h2><table id="policies"><thead><tr><th>policy</th>' +
           "".join(f"<th>{esc(h)}</th>" for h in POLICY_HEADERS) + "</tr></thead><tbody>"]
    for p, e in res["policies"].items():
        cells = "".join(f"<td>{esc(c)}</td>" for c in policy_cells(p, e))
        out.append(f'<tr data-policy="{esc(p)}"><td><code>{esc(p)}</code></td>{cells}</tr>')
    out.append("</tbody></table>")
    for who in ("a", "b"):
        if res[f"only_in_{who}"]:
            names = ", ".join(f"<code>{esc(p)}</code>" for p in res[f"only_in_{who}"])
            out.append(f"<p>Only in {who.upper()}: {names}.</p>")
    return out


def html_differing(res: dict, page_dir: Path) -> list[str]:
    out = ["<h2>Cases whose outcome differs</h2>"]
    head = ("<thead><tr><th>case</th><th>family</th><th>A (its viewer)</th><th>B (its viewer)</th>"
            "<th>A generations / repairs</th><th>B generations / repairs</th></tr></thead><tbody>")
    for p, e in res["policies"].items():
        if not e["differing"]:
            continue
        out.append(f'<h3><code>{esc(p)}</code> ({len(e["differing"])})</h3>'
                   f'<table class="differing" data-policy="{esc(p)}">{head}')
        for c in e["differing"]:
            out.append(f'<tr data-case="{esc(c["case_id"])}"><td><code>{esc(c["case_id"])}</code></td>'
                       f"<td>{esc(c['family'])}</td><td>{case_link(res['a'], c, 'a', page_dir)}</td>"
                       f"<td>{case_link(res['b'], c, 'b', page_dir)}</td>"
                       f"<td>{esc(cost(c['a_cost']))}</td><td>{esc(cost(c['b_cost']))}</td></tr>")
        out.append("</tbody></table>")
    if len(out) == 1:
        out.append("<p>None: every shared policy gets the same cases right in both runs.</p>")
    return out


def compare_html(res: dict, page_dir: Path) -> str:
    """``compare.html``: a self-contained page; every text escaped, every link relative to ``page_dir``."""
    body = ["<h1>Comparing two runs</h1>", *html_runs(res, page_dir), *html_policies(res),
            *html_differing(res, page_dir)]
    return page(f"Compare {res['a']['name']} vs {res['b']['name']}", "\n".join(body))


def write_compare(res: dict, out_dir: str | Path) -> list[Path]:
    """``compare.json``, ``compare.md`` and ``compare.html`` in ``out_dir``, each written whole."""
    from controller.report.outputs import atomic_write_json, atomic_write_text

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / n for n in ("compare.json", "compare.md", "compare.html")]
    md, page_ = compare_markdown(res), compare_html(res, out_dir)
    atomic_write_json(paths[0], res)
    atomic_write_text(paths[1], md)
    atomic_write_text(paths[2], page_)
    return paths
