// The trace viewer, part 1: shared helpers (escaping, numbers, values and ARC grids, the cell diff, code colours).
// viewer.py concatenates util.js, overview.js, list.js, case.js and main.js into one script, in
// that order, inside one function scope: names defined here are visible in the later files.
// Everything graded against the hidden answer is drawn inside .hindsight boxes or .hs columns,
// apart from what a controller could see.
let D = null;  // the run's data, set once by main.js
const $ = (id) => document.getElementById(id);
const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const esc = (s) => String(s == null ? "" : s).replace(/[&<>"']/g, (c) => ESC[c]);
const pct = (x) => (x == null ? "n/a" : (100 * x).toFixed(1) + "%");
const ci = (c) => (c ? "[" + (100 * c[0]).toFixed(1) + ", " + (100 * c[1]).toFixed(1) + "]" : "");
const caseHref = (id) => "#case/" + encodeURIComponent(id);
// one formatter each: toLocaleString builds a new one per call, which costs ~0.3 ms a number
const INT = new Intl.NumberFormat("en-US"), MS = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const num = (x) => (x == null ? "" : INT.format(x));
const ms = (x) => (x == null ? "" : MS.format(x));
const HS = '<span class="hslabel">HINDSIGHT: graded with the hidden answer</span>';
const badge = (text, cls) => '<span class="badge ' + (cls || "") + '">' + esc(text) + "</span>";
const plural = (n, one, many) => n + " " + (n === 1 ? one : many);

// The page's data: gzipped JSON in base64 (see viewer.py), unpacked without any network.
async function loadData() {
  const b64 = $("viewer-data").textContent.trim();
  const bin = atob(b64), bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

// ---- values: tables, ARC grids, any JSON -------------------------------------------------
// A 2-D value (a list of lists); an ARC grid is one of small ints (0-9), drawn as coloured cells.
const is2d = (v) => Array.isArray(v) && v.length > 0 && v.every((r) => Array.isArray(r));
const isArc = (v) => is2d(v) && v.every((r) => r.every((c) => Number.isInteger(c) && c >= 0 && c <= 9));
const arcTd = (c, cls, title) => '<td class="c' + c + (cls ? " " + cls : "") + '"' + (title ? ' title="' + esc(title) + '"' : "") + "></td>";
const json = (v) => JSON.stringify(v);

// A value's shape as "rows x cols", with a column range for ragged rows ("3x2-4"); a flat list's
// length; "-" for anything else.
function dims(t) {
  if (!Array.isArray(t)) return "-";
  if (!t.length) return "0x0";
  if (!is2d(t)) return "len " + t.length;
  const w = t.map((r) => r.length), lo = Math.min(...w), hi = Math.max(...w);
  return t.length + "x" + (lo === hi ? hi : lo + "-" + hi);
}

// Any value: a table of strings as cells, an ARC grid as coloured cells (its size above it), anything else as JSON.
function grid(t) {
  if (t == null) return '<p class="muted">(none)</p>';
  if (Array.isArray(t) && !t.length) return '<p class="muted">(empty table)</p>';
  if (isArc(t))
    return '<div class="muted dims">' + dims(t) + '</div><table class="arc">' +
      t.map((r) => "<tr>" + r.map((c) => arcTd(c, "", String(c))).join("") + "</tr>").join("") + "</table>";
  if (!is2d(t)) return '<pre class="value">' + esc(json(t)) + "</pre>";
  const cell = (c) => (typeof c === "string" ? c : json(c));
  const rows = t.map((r) => "<tr>" + r.map((c) => "<td" + (c === "" ? ' class="empty"' : "") + ">" + esc(cell(c)) + "</td>").join("") + "</tr>");
  return '<table class="grid">' + rows.join("") + "</table>";
}

// Cell-level diff of `got` against `exp` over the union of the two shapes: wrong cells red
// (title: the expected value), cells beyond the expected shape orange, expected cells that are
// missing grey. The count covers every position of the union, so it never exceeds the cells shown.
function diffCount(got, exp) {
  let wrong = 0, cells = 0;
  for (let i = 0; i < Math.max(got.length, exp.length); i++) {
    const g = got[i] || [], e = exp[i] || [];
    for (let j = 0; j < Math.max(g.length, e.length); j++) {
      cells++;
      if (g[j] !== e[j]) wrong++;
    }
  }
  const same = got.length === exp.length && got.every((r, i) => r.length === exp[i].length);
  return { wrong, cells, same };
}

function diffHead(got, exp) {
  const { wrong, cells, same } = diffCount(got, exp);
  if (same && wrong === 0) return '<span class="ok">identical</span>';
  if (same) return '<span class="bad">' + wrong + " of " + plural(cells, "cell differs", "cells differ") + "</span>";
  return '<span class="bad">' + plural(wrong, "cell differs", "cells differ") + "</span> (shapes: got " + dims(got) +
    ", expected " + dims(exp) + ")";
}

function diff(got, exp) {
  if (got == null) return '<p class="muted">(nothing to compare)</p>';
  if (!(is2d(got) || (Array.isArray(got) && !got.length)) || !(is2d(exp) || (Array.isArray(exp) && !exp.length)))
    return '<div class="diffhead">' + (json(got) === json(exp) ? '<span class="ok">identical</span>' : '<span class="bad">differs</span>') +
      "</div>" + grid(got);
  const arc = isArc(got) && isArc(exp), rows = [];
  for (let i = 0; i < Math.max(got.length, exp.length); i++) {
    const g = got[i], e = exp[i], tds = [];
    for (let j = 0; j < Math.max(g ? g.length : 0, e ? e.length : 0); j++) {
      const gv = g ? g[j] : undefined, ev = e ? e[j] : undefined;
      if (arc) tds.push(gv === undefined ? '<td class="missing" title="missing"></td>' : arcTd(gv, ev === undefined ? "extra" : gv !== ev ? "bad" : "",
        ev === undefined ? "not in the expected grid" : gv !== ev ? "expected: " + ev : String(gv)));
      else if (gv === undefined) tds.push('<td class="missing" title="missing">' + esc(ev) + "</td>");
      else if (ev === undefined) tds.push('<td class="extra" title="not in the expected table">' + esc(gv) + "</td>");
      else if (gv !== ev) tds.push('<td class="bad" title="expected: ' + esc(ev) + '">' + esc(gv) + "</td>");
      else tds.push("<td>" + esc(gv) + "</td>");
    }
    rows.push("<tr>" + tds.join("") + "</tr>");
  }
  return '<div class="diffhead">' + diffHead(got, exp) + '</div><table class="' + (arc ? "arc diff" : "grid diff") + '">' + rows.join("") + "</table>";
}

// Labelled tables side by side.
function tables(items) {
  return '<div class="tables">' + items.map(([t, body]) => "<div><h4>" + esc(t) + "</h4>" + body + "</div>").join("") + "</div>";
}

// ---- chat messages ----------------------------------------------------------------------
// `foldAssistant`: the model's own earlier turns (code it wrote, shown above) start folded.
function messages(msgs, foldAssistant) {
  return '<div class="msgs">' + (msgs || []).map((m) => {
    const body = "<pre>" + esc(m.content) + "</pre>";
    const fold = foldAssistant && m.role === "assistant";
    return '<div class="msg ' + esc(m.role) + '">' + (fold ? '<details><summary class="role">' + esc(m.role) + " · " +
      plural(m.content.split("\n").length, "line", "lines") + "</summary>" + body + "</details>" : '<div class="role">' + esc(m.role) + "</div>" + body) + "</div>";
  }).join("") + "</div>";
}

// ---- code highlighting ------------------------------------------------------------------
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
