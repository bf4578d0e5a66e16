// The trace viewer, part 3: the case list (#cases): filters, text search, sortable columns.

// ---- per-case figures (computed once) -----------------------------------------------------
function rounds(c) { return c.chains.flatMap((ch, j) => ch.map((r) => [j, r])); }
function sandboxMs(r) { return ((r.visible || {}).wall_ms || 0) + ((r.test || {}).wall_ms || 0); }

// Totals of a case: the record's own `totals` when it has them, else the sum of its attempts.
function totals(c) {
  if (c._tot) return c._tot;
  const t = c.totals || {}, parts = [c.direct, ...rounds(c).map((x) => x[1])];
  const sum = (k) => parts.reduce((s, p) => s + (p[k] || 0), 0);
  c._tot = {
    tokens: (t.prompt_tokens != null ? t.prompt_tokens + t.completion_tokens : sum("prompt_tokens") + sum("completion_tokens")),
    gen_ms: t.gen_ms != null ? t.gen_ms : sum("gen_ms"),
    sandbox_ms: t.sandbox_ms != null ? t.sandbox_ms : rounds(c).reduce((s, x) => s + sandboxMs(x[1]), 0),
  };
  return c._tot;
}
const graded = (c) => c.pol.filter((p) => p && p[2] != null);

// The text a search looks in: the case id, its family, every program's code, and every error
// (parse failures, sandbox errors and their messages, finish reasons other than "stop").
function searchFields(c) {
  if (c._fields) return c._fields;
  const f = [["id", c.id], ["family", c.family]];
  const dp = c.direct.parse || {};
  const direct = [dp.status === "failed" ? "parse failed " + (dp.detail || "") : "",
    c.direct.finish_reason && c.direct.finish_reason !== "stop" ? "finish " + c.direct.finish_reason : ""].join(" ").trim();
  if (direct) f.push(["direct error", direct]);
  for (const [j, r] of rounds(c)) {
    const at = "sample " + j + " round " + r.round;
    if (r.code) f.push(["code, " + at, r.code]);
    const v = r.visible || {}, t = r.test || {}, p = r.parse || {};
    const errs = [p.status === "failed" ? "parse failed " + (p.detail || "") : "",
      v.error ? "public example: " + v.error + " " + (v.message || "") : "",
      t.error && t.error !== v.error ? "new input: " + t.error + " " + (t.message || "") : "",
      r.finish_reason && r.finish_reason !== "stop" ? "finish " + r.finish_reason : ""].filter(Boolean).join("; ");
    if (errs) f.push(["error, " + at, errs]);
  }
  c._fields = f.map(([k, v]) => [k, v, v.toLowerCase()]);
  return c._fields;
}

function matches(c, terms) {
  const fs = searchFields(c);
  return terms.every((t) => fs.some((x) => x[2].includes(t)));
}

// Where the first search word was found, with a little context (shown under the case id).
function hitHint(c, terms) {
  const t = terms[0];
  if (!t || c.id.toLowerCase().includes(t) || c.family.toLowerCase().includes(t)) return "";
  const x = searchFields(c).find((f) => f[2].includes(t));
  if (!x) return "";
  const at = x[2].indexOf(t), a = Math.max(0, at - 30), b = Math.min(x[1].length, at + t.length + 30);
  const flat = (s) => esc(s.replace(/\s+/g, " "));
  return '<div class="hit"><span class="muted">' + esc(x[0]) + ":</span> " + (a ? "…" : "") + flat(x[1].slice(a, at)) +
    "<mark>" + esc(x[1].slice(at, at + t.length)) + "</mark>" + flat(x[1].slice(at + t.length, b)) + (b < x[1].length ? "…" : "") + "</div>";
}

// ---- columns and sorting ------------------------------------------------------------------
const BASE_COLUMNS = [
  { key: "id", label: "case", get: (c) => c.id },
  { key: "family", label: "family", get: (c) => c.family },
  { key: "split", label: "split", get: (c) => c.split },
  { key: "outcome", label: "outcome", hs: true, get: (c) => c.outcome },
  { key: "direct", label: "direct", hs: true, get: (c) => c.hidden.direct_category || "" },
  { key: "right", label: "policies right", hs: true, num: true, get: (c) => graded(c).filter((p) => p[2]).length,
    show: (c) => { const g = graded(c); return g.filter((p) => p[2]).length + "/" + g.length + (c.disagree ? ' <span class="muted">disagree</span>' : ""); } },
  { key: "attempts", label: "attempts", num: true, get: (c) => rounds(c).length },
  { key: "tokens", label: "tokens", num: true, get: (c) => totals(c).tokens, show: (c) => num(totals(c).tokens) },
  { key: "gen_ms", label: "generation ms", num: true, get: (c) => totals(c).gen_ms, show: (c) => ms(totals(c).gen_ms) },
  { key: "sandbox_ms", label: "sandbox ms", num: true, get: (c) => totals(c).sandbox_ms, show: (c) => ms(totals(c).sandbox_ms) },
];
const sortState = { key: null, dir: 1 };
const collator = new Intl.Collator("en", { numeric: true });  // exp0_2_1 before exp0_10_1

// The chosen policy filter as [index, "wrong" | "right"], or null.
function policyFilter() {
  const v = $("f-policy").value;
  return v ? [Number(v.split(":")[1]), v.split(":")[0]] : null;
}

function columns() {
  const pf = policyFilter();
  if (!pf) return BASE_COLUMNS;
  const i = pf[0], acts = (c) => (c.pol[i] ? c.pol[i][0].join(" → ") : "");
  return BASE_COLUMNS.concat([{ key: "policy", label: D.policies[i] + " actions", get: acts,
    show: (c) => '<span class="chips">' + (c.pol[i] ? c.pol[i][0].map((a) => "<span>" + esc(a) + "</span>").join(" ") : "") + "</span>" }]);
}

function sortCases(cs) {
  const col = columns().find((k) => k.key === sortState.key);
  if (!col) return cs;
  const idx = new Map(D.cases.map((c, i) => [c, i]));
  const cmp = col.num ? (a, b) => (a == null) - (b == null) || a - b : (a, b) => collator.compare(a, b);
  return cs.slice().sort((a, b) => sortState.dir * cmp(col.get(a), col.get(b)) || idx.get(a) - idx.get(b));
}

function renderHead() {
  $("case-list").tHead.innerHTML = "<tr>" + columns().map((k) => {
    const on = sortState.key === k.key, arrow = on ? (sortState.dir > 0 ? " ▲" : " ▼") : "";
    return '<th data-key="' + k.key + '" class="sortable' + (k.hs ? " hs" : "") + (k.num ? " n" : "") + '"' +
      (on ? ' aria-sort="' + (sortState.dir > 0 ? "ascending" : "descending") + '"' : "") +
      ' title="sort by ' + esc(k.label) + '">' + esc(k.label) + '<span class="arrow">' + arrow + "</span></th>";
  }).join("") + "</tr>";
}

// ---- filters ------------------------------------------------------------------------------
const uniq = (xs) => [...new Set(xs)].sort(collator.compare);
function options(sel, values) {
  $(sel).innerHTML = '<option value="">all</option>' + values.map((v) => '<option value="' + esc(v) + '">' + esc(v) + "</option>").join("");
}

function setupList() {
  options("f-split", uniq(D.cases.map((c) => c.split)));
  options("f-family", uniq(D.cases.map((c) => c.family)));
  options("f-outcome", ["direct right", "program right", "both", "neither", "unscored"].filter((o) => D.cases.some((c) => c.outcome === o)));
  options("f-cat", uniq(D.cases.flatMap((c) => c.cats)));
  const pol = (kind) => '<optgroup label="' + kind + ' under">' + D.policies.map((p, i) =>
    '<option value="' + kind + ":" + i + '">' + esc(p) + " " + kind + "</option>").join("") + "</optgroup>";
  $("f-policy").innerHTML = '<option value="">any</option>' + pol("wrong") + pol("right");
  for (const id of ["f-search", "f-split", "f-family", "f-outcome", "f-cat", "f-policy", "f-disagree"])
    $(id).addEventListener(id === "f-search" ? "input" : "change", renderList);
  $("case-list").tHead.addEventListener("click", (ev) => {
    const th = ev.target.closest("th[data-key]");
    if (!th) return;
    sortState.dir = sortState.key === th.dataset.key ? -sortState.dir : 1;
    sortState.key = th.dataset.key;
    renderList();
  });
  $("case-list").tBodies[0].addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr[data-id]");
    if (tr && ev.target.tagName !== "A") location.hash = caseHref(tr.dataset.id);
  });
}

const searchTerms = () => $("f-search").value.trim().toLowerCase().split(/\s+/).filter(Boolean);

// The cases the filters let through, in the list's sort order (the case page's previous/next).
function filtered() {
  const terms = searchTerms(), s = $("f-split").value, f = $("f-family").value, o = $("f-outcome").value,
    k = $("f-cat").value, dis = $("f-disagree").checked, pf = policyFilter();
  const want = pf && pf[1] === "right";
  return sortCases(D.cases.filter((c) => (!s || c.split === s) && (!f || c.family === f) && (!o || c.outcome === o) &&
    (!k || c.cats.includes(k)) && (!dis || c.disagree) && (!pf || (c.pol[pf[0]] && c.pol[pf[0]][2] === want)) &&
    (!terms.length || matches(c, terms))));
}

// ---- the list's state in the URL: #cases?split=test&q=zebra&sort=tokens&dir=desc ----------
// Filters and sort live in the hash (a reload or a shared link shows the same list); the policy
// filter is named by policy, not by its place in the menu.
const URL_FILTERS = [["q", "f-search"], ["split", "f-split"], ["family", "f-family"], ["outcome", "f-outcome"],
  ["cat", "f-cat"]];

function listHash() {
  const p = new URLSearchParams();
  for (const [k, id] of URL_FILTERS) if ($(id).value) p.set(k, $(id).value);
  const pf = policyFilter();
  if (pf) p.set("policy", pf[1] + ":" + D.policies[pf[0]]);
  if ($("f-disagree").checked) p.set("disagree", "1");
  if (sortState.key) { p.set("sort", sortState.key); if (sortState.dir < 0) p.set("dir", "desc"); }
  const q = p.toString();
  return "#cases" + (q ? "?" + q : "");
}

// Set the controls from a hash's query (a value a menu does not offer is dropped), then draw.
function loadListState(query) {
  const p = new URLSearchParams(query);
  const pick = (el, v) => { el.value = v; if (el.value !== v) el.value = ""; };
  for (const [k, id] of URL_FILTERS) pick($(id), p.get(k) || "");
  const [kind, name] = (p.get("policy") || "").split(/:(.*)/s), i = D.policies.indexOf(name);
  pick($("f-policy"), i >= 0 ? kind + ":" + i : "");
  $("f-disagree").checked = p.get("disagree") === "1";
  const key = p.get("sort");
  sortState.key = columns().some((c) => c.key === key) ? key : null;
  sortState.dir = p.get("dir") === "desc" ? -1 : 1;
  renderList();
}

function renderList() {
  const here = listHash();
  $("nav-cases").setAttribute("href", here);  // back to the list as it was left
  if (!$("cases").hidden && location.hash !== here) history.replaceState(null, "", here);
  const cs = filtered(), cols = columns(), terms = searchTerms();
  renderHead();
  $("f-count").textContent = cs.length + " of " + D.cases.length + " cases";
  $("case-list").tBodies[0].innerHTML = cs.map((c) => '<tr data-id="' + esc(c.id) + '">' + cols.map((k, n) => {
    const body = k.show ? k.show(c) : esc(k.get(c));
    if (n === 0) return '<td><a href="' + caseHref(c.id) + '">' + body + "</a>" + hitHint(c, terms) + "</td>";
    return "<td" + (k.num ? ' class="n"' : "") + ">" + body + "</td>";
  }).join("") + "</tr>").join("");
}
