// The trace viewer, part 2: the overview (#overview): run metadata, splits, held-out results,
// the per-seed spread and the figures.

// Run metadata, grouped. A path is looked up in {config, trace: run_config.json's trace_config,
// versions, timing}; rows whose value is absent (an older summary) are left out, and the whole
// config is shown as JSON below, so a setting missing from these groups is still on the page.
const META = [
  ["Run", [["case set", "config.case_set"], ["cases (hash)", "trace.case_set"], ["cases traced", "trace.n_cases"],
    ["trace file", "config.trace_file"], ["tag", "config.tag"], ["split method", "split_method.method"],
    ["git commit", "versions.git_commit"], ["total time (s)", "timing.total_s"], ["tracing time (s)", "timing.traces_s"],
    ["prompt version", "prompts.traces"], ["prompts shown (today's)", "prompts.today"]]],
  ["Backend and sampling", [["backend", "config.backend.name"], ["model", "config.backend.model"],
    ["temperature", "config.backend.temperature"], ["top_p", "config.backend.top_p"], ["top_k", "config.backend.top_k"],
    ["max new tokens", "config.backend.max_new_tokens"], ["thinking", "config.backend.enable_thinking"],
    ["synth WRITE nodes", "config.backend.synth_write_nodes"], ["synth FIX nodes", "config.backend.synth_fix_nodes"],
    ["synth time cap (s)", "config.backend.synth_time_budget_s"]]],
  ["Seeds", [["sampling seed", "config.backend.seed"], ["split seed", "config.split_seed"],
    ["experiment seed", "config.experiment.seed"], ["training seeds", "config.experiment.seeds"],
    ["split seeds", "config.experiment.split_seeds"], ["LoRA seed", "config.experiment.lora.seed"]]],
  ["Rollout", [["max repairs", "config.rollout.max_repairs"], ["program samples", "config.rollout.program_samples"],
    ["repair history", "config.rollout.repair_history"], ["exec timeout (s)", "config.rollout.exec_timeout_s"],
    ["memory (MB)", "config.rollout.memory_mb"], ["wave size", "config.rollout.wave_size"]]],
  ["Experiment", [["cost unit", "config.experiment.cost"], ["CV folds", "config.experiment.cv_folds"],
    ["DAgger iterations", "config.experiment.dagger_iters"], ["DAgger beta", "config.experiment.dagger_beta"],
    ["LoRA", "config.experiment.train_lora"], ["LoRA base", "config.experiment.lora.base_model"],
    ["LoRA steps", "config.experiment.lora.max_steps"], ["bootstrap resamples", "config.experiment.bootstrap_resamples"]]],
  ["Versions", [["python", "versions.python"], ["torch", "versions.torch"], ["transformers", "versions.transformers"],
    ["peft", "versions.peft"], ["vllm", "versions.vllm"]]],
];

function lookup(obj, path) {
  let v = obj;
  for (const k of path.split(".")) { if (v == null || typeof v !== "object" || !(k in v)) return undefined; v = v[k]; }
  return v;
}
const fmtValue = (v) => (v === null ? "none" : typeof v === "object" ? JSON.stringify(v) : String(v));

function metadata(r) {
  const src = { config: r.config || {}, trace: r.trace_config || {}, versions: r.versions || {}, timing: r.timing || {},
    split_method: r.split_method || {}, prompts: r.prompts || {} };
  const groups = META.map(([title, rows]) => {
    const trs = rows.map(([label, path]) => {
      const v = lookup(src, path);
      return v === undefined ? "" : "<tr><th>" + esc(label) + '</th><td data-key="' + esc(path) + '">' + esc(fmtValue(v)) + "</td></tr>";
    }).join("");
    return trs ? '<div class="metagroup"><h3>' + esc(title) + '</h3><table class="kv"><tbody>' + trs + "</tbody></table></div>" : "";
  });
  return '<div id="meta" class="metagrid">' + groups.join("") + "</div>" +
    '<details class="json"><summary>full config (JSON)</summary><pre id="config-json">' +
    esc(JSON.stringify({ config: r.config, trace_config: r.trace_config, versions: r.versions }, null, 2)) + "</pre></details>";
}

// The per-seed spread (`--seeds N`): one row per (policy, split).
function seedSpread(seeds) {
  const rows = [];
  for (const [pol, bySplit] of Object.entries(seeds || {}))
    for (const [split, x] of Object.entries(bySplit || {}))
      if (x && Array.isArray(x.exact))
        rows.push("<tr><td><code>" + esc(pol) + "</code></td><td>" + esc(split) + "</td><td>" + esc((x.seeds || []).join(", ")) +
          "</td><td>" + esc(x.exact.join(", ")) + (x.n != null ? ' <span class="muted">of ' + x.n + "</span>" : "") +
          "</td><td>" + esc(x.mean) + "</td><td>" + esc(x.min) + "–" + esc(x.max) + "</td></tr>");
  if (!rows.length) return "";
  return '<h2>Seeds</h2><table id="seeds"><thead><tr><th>policy</th><th>split</th><th>seeds</th><th class="hs">exact per seed</th>' +
    '<th class="hs">mean</th><th class="hs">range</th></tr></thead><tbody>' + rows.join("") + "</tbody></table>";
}

function ceilingTable(c) {
  if (!c || !c.points || !c.points.length) return "";
  const share = (x) => (x === null || x === undefined) ? "n/a" : Math.round(100 * x) + "%";
  const h = ['<h2>Ceiling</h2>'];
  if (c.sentence) h.push('<p id="ceiling-sentence">' + esc(c.sentence) + "</p>");
  h.push('<table id="ceiling"><thead><tr><th>decision point</th><th class="hs">cases</th><th class="hs">safe to stop</th>' +
    '<th class="hs">saved if safe cases stop</th><th class="hs">share of gap</th></tr></thead><tbody>');
  for (const p of c.points)
    h.push("<tr><td>" + esc(p.name) + '</td><td class="n">' + p.cases + '</td><td class="n">' + p.safe + '</td><td class="n">' +
      p.savings_if_all_safe_stop + '</td><td class="n">' + share(p.gap_share_if_all_safe_stop) + "</td></tr>");
  h.push("</tbody></table><p>in-sample zero-loss trees (depth: share of gap): " +
    (c.in_sample || []).map((r) => r.depth + ": " + share(r.gap_share)).join(", ") + "; out of family: " +
    (c.out_of_sample || []).map((r) => esc(r.model) + " " + share(r.gap_share) + " (" + r.lost + " lost)").join(", ") + "</p>");
  return h.join("");
}

function overview() {
  const r = D.run, h = [];
  h.push("<h2>Run</h2>" + (r.prompts && r.prompts.note ? '<p id="prompt-note" class="badge warn">' + esc(r.prompts.note) + "</p>" : "") +
    metadata(r));
  h.push("<h2>Splits</h2><table><thead><tr><th>split</th><th>cases</th><th>families</th>" +
    '<th class="hs">direct right</th><th class="hs">program right</th><th class="hs">both</th><th class="hs">neither</th></tr></thead><tbody>');
  for (const [s, v] of Object.entries(r.splits)) {
    const n = (o) => D.cases.filter((c) => c.split === s && c.outcome === o).length;
    h.push("<tr><td>" + esc(s) + '</td><td class="n">' + v.cases + '</td><td class="n">' + v.families + '</td><td class="n">' + n("direct right") +
      '</td><td class="n">' + n("program right") + '</td><td class="n">' + n("both") + '</td><td class="n">' + n("neither") + "</td></tr>");
  }
  h.push("</tbody></table>" + ceilingTable(r.ceiling));
  h.push('<h2>Held-out results</h2><table id="heldout"><thead><tr><th rowspan="2">policy</th>' +
    '<th colspan="3" class="hs">dev</th><th colspan="3" class="hs">test</th></tr><tr>');
  for (let i = 0; i < 2; i++) h.push('<th class="hs">exact</th><th class="hs">accuracy [95% CI]</th><th>program gens</th>');
  h.push("</tr></thead><tbody>");
  for (const row of r.heldout) {
    h.push("<tr><td><code>" + esc(row.policy) + "</code></td>");
    for (const s of ["dev", "test"]) {
      const x = row[s];
      if (!x) { h.push("<td></td><td></td><td></td>"); continue; }
      const fam = x.accuracy_ci95_family ? '<br><span class="muted">families ' + ci(x.accuracy_ci95_family) + "</span>" : "";
      h.push('<td class="n">' + x.exact + "/" + x.n + "</td><td>" + pct(x.accuracy) + " " + ci(x.accuracy_ci95) + fam +
        '</td><td class="n">' + esc(x.program_generations) + "</td>");
    }
    h.push("</tr>");
  }
  h.push("</tbody></table>" + seedSpread(r.seeds) + "<h2>Figures</h2>");
  if (!r.figures.length) h.push('<p class="muted">(no figures in ../figures/)</p>');
  h.push('<div class="figures">');
  for (const f of r.figures)
    h.push('<figure' + (f === "accuracy_vs_compute.png" ? ' class="wide"' : "") + '><a href="../figures/' + esc(f) + '"><img src="../figures/' + esc(f) + '" alt="' + esc(f) +
      '"></a><figcaption>' + esc(f) + "</figcaption></figure>");
  $("overview").innerHTML = h.join("") + "</div>";
}
