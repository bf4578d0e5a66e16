// The trace viewer: three views picked by the URL hash (#overview, #cases, #case/<id>).
// Everything graded against the hidden answer is drawn inside .hindsight boxes or .hs columns,
// apart from what a controller could see.
(function () {
  "use strict";
  const D = window.VIEWER_DATA;
  const $ = (id) => document.getElementById(id);
  const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  const esc = (s) => String(s == null ? "" : s).replace(/[&<>"']/g, (c) => ESC[c]);
  const pct = (x) => (x == null ? "n/a" : (100 * x).toFixed(1) + "%");
  const ci = (c) => (c ? "[" + (100 * c[0]).toFixed(1) + ", " + (100 * c[1]).toFixed(1) + "]" : "");
  const caseHref = (id) => "#case/" + encodeURIComponent(id);
  const byId = new Map(D.cases.map((c) => [c.id, c]));
  const HS = '<span class="hslabel">HINDSIGHT: graded with the hidden answer</span>';

  // ---- tables -------------------------------------------------------------------------
  function shape(t) { return t.length + " rows x " + (t.length ? Math.max(...t.map((r) => r.length)) : 0) + " cols"; }

  function grid(t) {
    if (t == null) return '<p class="muted">(no table)</p>';
    if (!t.length) return '<p class="muted">(empty table)</p>';
    const rows = t.map((r) => "<tr>" + r.map((c) => '<td class="' + (c === "" ? "empty" : "") + '">' + esc(c) + "</td>").join("") + "</tr>");
    return '<table class="grid">' + rows.join("") + "</table>";
  }

  // Cell-level diff of `got` against `exp`: wrong cells red (title: the expected value),
  // cells beyond the expected shape orange, expected cells that are missing grey.
  function diff(got, exp) {
    if (got == null) return '<p class="muted">(no table to compare)</p>';
    let wrong = 0, cells = 0;
    const rows = [];
    for (let i = 0; i < Math.max(got.length, exp.length); i++) {
      const g = got[i], e = exp[i], tds = [];
      for (let j = 0; j < Math.max(g ? g.length : 0, e ? e.length : 0); j++) {
        const gv = g ? g[j] : undefined, ev = e ? e[j] : undefined;
        if (ev !== undefined) cells++;
        if (gv === undefined) { wrong++; tds.push('<td class="missing" title="missing">' + esc(ev) + "</td>"); }
        else if (ev === undefined) { wrong++; tds.push('<td class="extra" title="not in the expected table">' + esc(gv) + "</td>"); }
        else if (gv !== ev) { wrong++; tds.push('<td class="bad" title="expected: ' + esc(ev) + '">' + esc(gv) + "</td>"); }
        else tds.push("<td>" + esc(gv) + "</td>");
      }
      rows.push("<tr>" + tds.join("") + "</tr>");
    }
    const head = wrong === 0 ? '<span class="ok">identical</span>'
      : '<span class="bad">' + wrong + " of " + cells + " cells differ</span>" +
        (shape(got) !== shape(exp) ? " (got " + shape(got) + ", expected " + shape(exp) + ")" : "");
    return "<div>" + head + '</div><table class="grid diff">' + rows.join("") + "</table>";
  }

  // ---- code highlighting ----------------------------------------------------------------
  const TOKENS = /(#[^\n]*)|("""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|\b(def|class)(\s+)([A-Za-z_]\w*)|\b(return|for|in|if|elif|else|while|import|from|as|not|and|or|is|None|True|False|lambda|with|try|except|finally|raise|pass|break|continue|yield|global|nonlocal|assert|del)\b|\b(\d+(?:\.\d+)?)\b/g;
  function highlight(code) {
    let out = "", last = 0, m;
    TOKENS.lastIndex = 0;
    while ((m = TOKENS.exec(code)) !== null) {
      out += esc(code.slice(last, m.index));
      if (m[1]) out += '<span class="cm">' + esc(m[1]) + "</span>";
      else if (m[2]) out += '<span class="st">' + esc(m[2]) + "</span>";
      else if (m[3]) out += '<span class="kw">' + m[3] + "</span>" + m[4] + '<span class="fn">' + esc(m[5]) + "</span>";
      else if (m[6]) out += '<span class="kw">' + m[6] + "</span>";
      else out += '<span class="nu">' + m[7] + "</span>";
      last = TOKENS.lastIndex;
    }
    return out + esc(code.slice(last));
  }

  // ---- overview -------------------------------------------------------------------------
  function overview() {
    const r = D.run, h = [];
    h.push("<h2>Run</h2><table><tbody>");
    for (const [k, v] of [["case set", r.case_set], ["backend", r.backend], ["model", r.model], ["trace file", r.trace_file],
      ["records", r.n_records], ["max repairs", r.max_repairs], ["program samples", r.program_samples], ["policies", D.policies.length]])
      h.push("<tr><th>" + k + "</th><td>" + esc(v) + "</td></tr>");
    h.push("</tbody></table><h2>Splits</h2><table><thead><tr><th>split</th><th>cases</th><th>families</th>" +
      '<th class="hs">direct right</th><th class="hs">program right</th><th class="hs">both</th><th class="hs">neither</th></tr></thead><tbody>');
    for (const [s, v] of Object.entries(r.splits)) {
      const n = (o) => D.cases.filter((c) => c.split === s && c.outcome === o).length;
      h.push("<tr><td>" + esc(s) + "</td><td>" + v.cases + "</td><td>" + v.families + "</td><td>" + n("direct right") +
        "</td><td>" + n("program right") + "</td><td>" + n("both") + "</td><td>" + n("neither") + "</td></tr>");
    }
    h.push('</tbody></table><h2>Held-out results</h2><table id="heldout"><thead><tr><th rowspan="2">policy</th>' +
      '<th colspan="3">dev</th><th colspan="3">test</th></tr><tr>');
    for (let i = 0; i < 2; i++) h.push("<th>exact</th><th>accuracy [95% CI]</th><th>program gens</th>");
    h.push("</tr></thead><tbody>");
    for (const row of r.heldout) {
      h.push("<tr><td><code>" + esc(row.policy) + "</code></td>");
      for (const s of ["dev", "test"]) {
        const x = row[s];
        if (!x) { h.push("<td></td><td></td><td></td>"); continue; }
        const fam = x.accuracy_ci95_family ? '<br><span class="muted">families ' + ci(x.accuracy_ci95_family) + "</span>" : "";
        h.push("<td>" + x.exact + "/" + x.n + "</td><td>" + pct(x.accuracy) + " " + ci(x.accuracy_ci95) + fam +
          "</td><td>" + esc(x.program_generations) + "</td>");
      }
      h.push("</tr>");
    }
    h.push("</tbody></table><h2>Figures</h2>");
    if (!r.figures.length) h.push('<p class="muted">(no figures in ../figures/)</p>');
    for (const f of r.figures)
      h.push('<figure><a href="../figures/' + esc(f) + '"><img src="../figures/' + esc(f) + '" alt="' + esc(f) +
        '" style="max-width:640px"></a><figcaption>' + esc(f) + "</figcaption></figure>");
    $("overview").innerHTML = h.join("");
  }

  // ---- case list ------------------------------------------------------------------------
  const uniq = (xs) => [...new Set(xs)].sort();
  function options(sel, values) {
    $(sel).innerHTML = '<option value="">all</option>' + values.map((v) => '<option value="' + esc(v) + '">' + esc(v) + "</option>").join("");
  }
  function setupFilters() {
    options("f-split", uniq(D.cases.map((c) => c.split)));
    options("f-family", uniq(D.cases.map((c) => c.family)));
    options("f-outcome", ["direct right", "program right", "both", "neither", "unscored"].filter((o) => D.cases.some((c) => c.outcome === o)));
    options("f-cat", uniq(D.cases.flatMap((c) => c.cats)));
    for (const id of ["f-search", "f-split", "f-family", "f-outcome", "f-cat", "f-disagree"])
      $(id).addEventListener(id === "f-search" ? "input" : "change", renderList);
    $("case-list").addEventListener("click", (ev) => {
      const tr = ev.target.closest("tr[data-id]");
      if (tr && ev.target.tagName !== "A") location.hash = caseHref(tr.dataset.id);
    });
  }
  function filtered() {
    const q = $("f-search").value.trim().toLowerCase(), s = $("f-split").value, f = $("f-family").value,
      o = $("f-outcome").value, k = $("f-cat").value, dis = $("f-disagree").checked;
    return D.cases.filter((c) => (!q || c.id.toLowerCase().includes(q)) && (!s || c.split === s) && (!f || c.family === f) &&
      (!o || c.outcome === o) && (!k || c.cats.includes(k)) && (!dis || c.disagree));
  }
  function renderList() {
    const cs = filtered();
    $("f-count").textContent = cs.length + " of " + D.cases.length + " cases";
    $("case-list").tBodies[0].innerHTML = cs.map((c) => {
      const graded = c.pol.filter((p) => p && p[2] != null);
      return '<tr data-id="' + esc(c.id) + '"><td><a href="' + caseHref(c.id) + '">' + esc(c.id) + "</a></td><td>" + esc(c.family) +
        "</td><td>" + esc(c.split) + "</td><td>" + esc(c.outcome) + "</td><td>" + esc(c.hidden.direct_category || "") + "</td><td>" +
        graded.filter((p) => p[2]).length + "/" + graded.length + (c.disagree ? " (disagree)" : "") + "</td></tr>";
    }).join("");
  }

  // ---- case page ------------------------------------------------------------------------
  function badge(text, cls) { return '<span class="badge ' + (cls || "") + '">' + esc(text) + "</span>"; }
  function tables(items) { return '<div class="tables">' + items.map(([t, body]) => "<div><h3>" + esc(t) + "</h3>" + body + "</div>").join("") + "</div>"; }

  function attempt(c, j, rnd) {
    const v = rnd.visible || {}, t = rnd.test || {}, p = rnd.parse || {}, h = [];
    h.push('<div class="attempt' + (rnd.visible_pass ? " passed" : "") + '"><h3>sample ' + j + " · round " + esc(rnd.round) + " · " +
      esc((rnd.kind || "").toUpperCase()) + "</h3><div>parse " + badge((p.status || "?") + (p.detail ? " (" + p.detail + ")" : ""), p.status === "failed" ? "fail" : "") +
      " finish " + badge(rnd.finish_reason || "?") + (rnd.search_nodes != null ? " search nodes " + badge(rnd.search_nodes) : "") +
      " public example " + badge(rnd.visible_pass ? "pass" : "fail" + (v.error ? ": " + v.error : ""), rnd.visible_pass ? "pass" : "fail") + "</div>");
    if (rnd.feedback_in) h.push("<h3>Repair prompt the model got (feedback on the previous round)</h3><pre>" + esc(rnd.feedback_in) + "</pre>");
    h.push(rnd.code ? '<h3>Code</h3><pre class="code">' + highlight(rnd.code) + "</pre>" : '<p class="muted">(no code could be parsed)</p>');
    h.push("<details><summary>raw answer</summary><pre>" + esc(rnd.raw) + "</pre></details>");
    const pub = v.output != null ? diff(v.output, c.task.output_table) : "<pre>" + esc((v.error || "") + ": " + (v.message || "")) + "</pre>";
    const test = rnd.test_output != null ? grid(rnd.test_output) : "<pre>" + esc((t.error || "no output") + (t.message ? ": " + t.message : "")) + "</pre>";
    h.push(tables([["Public example: output vs example output", pub], ["New input: output", test]]));
    if (c.hidden.answer != null && rnd.hidden_exact != null)
      h.push('<div class="panel hindsight">' + HS + " new-input output " +
        badge(rnd.hidden_exact ? "right" : "wrong", rnd.hidden_exact ? "pass" : "fail") +
        (rnd.test_output != null && !rnd.hidden_exact ? diff(rnd.test_output, c.hidden.answer) : "") + "</div>");
    return h.join("") + "</div>";
  }

  function policies(c) {
    const rows = D.policies.map((name, i) => {
      const p = c.pol[i];
      if (!p) return "<tr><td><code>" + esc(name) + '</code></td><td colspan="3" class="muted">(no outcome)</td></tr>';
      return "<tr><td><code>" + esc(name) + '</code></td><td class="chips">' + p[0].map((a) => "<span>" + esc(a) + "</span>").join(" → ") +
        "</td><td>" + esc(p[1]) + '</td><td class="' + (p[2] ? "ok" : p[2] === false ? "bad" : "") + '">' +
        (p[2] == null ? "unscored" : p[2] ? "right" : "wrong") + "</td></tr>";
    });
    return '<table id="policies"><thead><tr><th>policy</th><th>actions</th><th>committed</th><th class="hs">outcome (hindsight)</th></tr></thead><tbody>' +
      rows.join("") + "</tbody></table>";
  }

  function casePage(id) {
    const c = byId.get(id);
    if (!c) { $("case").innerHTML = "<p>No case <code>" + esc(id) + '</code> in this run. <a href="#cases">All cases</a></p>'; return; }
    const list = filtered(), k = list.indexOf(c), h = [];
    h.push('<div class="casenav"><a href="#cases">← cases</a>' + (k > 0 ? '<a href="' + caseHref(list[k - 1].id) + '">‹ previous</a>' : "") +
      (k >= 0 && k < list.length - 1 ? '<a href="' + caseHref(list[k + 1].id) + '">next ›</a>' : "") +
      (k >= 0 ? '<span class="muted">' + (k + 1) + " of " + list.length + " filtered</span>" : "") + "</div>");
    h.push('<h2 id="case-title">' + esc(c.id) + '</h2><div class="muted">family ' + esc(c.family) + " · split " + esc(c.split) + "</div>");
    h.push('<div class="panel"><h3>Task (what the model and a controller see)</h3>' +
      tables([["Example input", grid(c.task.input_table)], ["Example output", grid(c.task.output_table)], ["New input", grid(c.task.test_table)]]) + "</div>");
    const d = c.direct, dp = d.parse || {};
    h.push('<div class="panel"><h3>Direct answer</h3>parse ' + badge((dp.status || "?") + (dp.detail ? " (" + dp.detail + ")" : ""), dp.status === "failed" ? "fail" : "") +
      " finish " + badge(d.finish_reason || "?") + grid(d.table) + "<details><summary>raw answer</summary><pre>" + esc(d.raw) + "</pre></details></div>");
    if (c.hidden.answer != null)
      h.push('<div class="panel hindsight" id="hindsight">' + HS + " outcome " + badge(c.outcome) + " direct " + badge(c.hidden.direct_category) +
        tables([["Direct answer vs hidden answer", diff(d.table, c.hidden.answer)], ["Hidden answer", grid(c.hidden.answer)]]) +
        '<div class="muted">failure tags: ' + esc(c.cats.join(", ")) + "</div></div>");
    else h.push('<div class="panel hindsight">' + HS + " this case has no hidden answer (unscored)</div>");
    h.push("<h2>Policies</h2>" + policies(c) + "<h2>Program attempts</h2>");
    c.chains.forEach((chain, j) => chain.forEach((rnd) => h.push(attempt(c, j, rnd))));
    if (!c.chains.some((ch) => ch.length)) h.push('<p class="muted">(no program attempts)</p>');
    $("case").innerHTML = h.join("");
  }

  // ---- routing --------------------------------------------------------------------------
  function route() {
    const hash = location.hash.slice(1) || "overview";
    const view = hash.startsWith("case/") ? "case" : hash === "cases" ? "cases" : "overview";
    for (const v of ["overview", "cases", "case"]) $(v).hidden = v !== view;
    $("nav-overview").className = view === "overview" ? "on" : "";
    $("nav-cases").className = view !== "overview" ? "on" : "";
    if (view === "case") { casePage(decodeURIComponent(hash.slice(5))); window.scrollTo(0, 0); }
  }

  const r = D.run;
  $("runline").textContent = [r.case_set, r.backend + (r.model ? " / " + r.model : ""), r.n_records + " cases", D.policies.length + " policies"].join(" · ");
  overview();
  setupFilters();
  renderList();
  window.addEventListener("hashchange", route);
  route();
})();
