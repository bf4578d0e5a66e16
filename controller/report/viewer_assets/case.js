// The trace viewer, part 4: one case (#case/<id>): the task, the direct answer, the hindsight
// grades, each policy's actions, every attempt's cost, prompt, code and runs.

// "stop" is the normal end of a generation; anything else (length, budget, ...) is worth a look.
const finishBadge = (f) => "finish " + badge(f || "?", f && f !== "stop" ? "warn" : "");

function parseBadge(p) {
  p = p || {};
  return "parse " + badge((p.status || "?") + (p.detail ? " (" + p.detail + ")" : ""), p.status === "failed" ? "fail" : p.status === "declined" ? "warn" : "");
}

// Tokens, generation latency and sandbox time of one attempt, as one line.
function costLine(a, withSandbox) {
  const parts = [];
  if (a.prompt_tokens != null) parts.push("tokens " + num(a.prompt_tokens) + " in / " + num(a.completion_tokens) + " out");
  if (a.gen_ms != null) parts.push("generation " + ms(a.gen_ms) + " ms");
  if (withSandbox) parts.push("sandbox " + ms((a.visible || {}).wall_ms) + " ms example + " + ms((a.test || {}).wall_ms) + " ms new input");
  return parts.length ? '<div class="cost">' + parts.join(" · ") + "</div>" : "";
}

// One row per attempt (the direct answer, then every program round) with its cost, and the totals.
function attemptTable(c) {
  const row = (label, href, a, ok, sb, hs) => "<tr><td>" + (href ? '<a href="' + caseHref(c.id) + '" data-goto="' + href + '">' + label + "</a>" : label) + "</td><td>" + ok +
    '</td><td class="n">' + num(a.prompt_tokens) + '</td><td class="n">' + num(a.completion_tokens) + '</td><td class="n">' + ms(a.gen_ms) +
    '</td><td class="n">' + sb + "</td><td>" + hs + "</td></tr>";
  const grade = (x) => (x == null ? "" : x ? '<span class="ok">right</span>' : '<span class="bad">wrong</span>');
  const dp = c.direct.parse || {};
  const rows = [row("direct", "", c.direct, dp.status === "failed" ? "parse failed" : dp.status === "declined" ? "declined" : "answered", "",
    grade(c.hidden.direct_exact))];
  for (const [j, r] of rounds(c))
    rows.push(row("sample " + j + " · round " + r.round + " · " + esc((r.kind || "").toUpperCase()), "attempt-" + j + "-" + r.round, r,
      r.visible_pass ? '<span class="ok">passes example</span>' : '<span class="bad">fails' + ((r.visible || {}).error ? ": " + esc(r.visible.error) : "") + "</span>",
      ms(sandboxMs(r)), grade(r.hidden_exact)));
  const t = totals(c);
  return '<table id="attempts"><thead><tr><th>attempt</th><th>visible result</th><th class="n">prompt tokens</th><th class="n">completion tokens</th>' +
    '<th class="n">generation ms</th><th class="n">sandbox ms</th><th class="hs">new input (hindsight)</th></tr></thead><tbody>' + rows.join("") +
    '</tbody><tfoot><tr><th>total</th><th></th><th class="n" colspan="2">' + num(t.tokens) + ' tokens</th><th class="n">' + ms(t.gen_ms) +
    '</th><th class="n">' + ms(t.sandbox_ms) + "</th><th></th></tr></tfoot></table>";
}

// Put back the code viewer.py cut out of a raw answer or a FIX prompt turn (see _cut_code there).
function uncut(text, ref, chain) {
  return ref ? text.slice(0, ref[3]) + chain[ref[0]].code.slice(ref[1], ref[2]) + text.slice(ref[3]) : text;
}

function attempt(c, j, rnd) {
  const v = rnd.visible || {}, t = rnd.test || {}, h = [];
  h.push('<div class="attempt' + (rnd.visible_pass ? " passed" : "") + '" id="attempt-' + j + "-" + esc(rnd.round) + '"><h3>sample ' + j +
    " · round " + esc(rnd.round) + " · " + esc((rnd.kind || "").toUpperCase()) + '</h3><div class="badges">' + parseBadge(rnd.parse) +
    " " + finishBadge(rnd.finish_reason) + (rnd.search_nodes != null ? " search nodes " + badge(num(rnd.search_nodes)) : "") +
    " public example " + badge(rnd.visible_pass ? "pass" : "fail" + (v.error ? ": " + v.error : ""), rnd.visible_pass ? "pass" : "fail") +
    "</div>" + costLine(rnd, true));
  if (c.prompts.recorded)  // imported: the prompt the source recorded for this attempt, never one rebuilt here
    h.push(rnd.prompt ? '<details class="prompt recorded-prompt"><summary>prompt as recorded with the output' +
      (rnd.model ? " (" + esc(rnd.model) + ")" : "") + "</summary>" + messages(rnd.prompt) + "</details>" :
      '<p class="muted recorded-prompt">(no prompt recorded with this output)</p>');
  else if (rnd.round === 0)
    h.push('<details class="prompt write-prompt"><summary>WRITE prompt the model was sent</summary>' + messages(c.prompts.write) + "</details>");
  if (rnd.fix_turns)
    h.push('<details class="prompt fix-prompt" open><summary>FIX prompt the model was sent: the WRITE prompt, then these turns' +
      (rnd.feedback != null ? " (the feedback as recorded)" : " (rebuilt with today's templates)") + "</summary>" +
      messages(rnd.fix_turns.map((m) => ({ role: m.role, content: uncut(m.content, m.ref, c.chains[j]) })), true) + "</details>");
  h.push(rnd.code ? '<h4>Code</h4><pre class="code">' + highlight(rnd.code) + "</pre>" : '<p class="muted">(no code could be parsed)</p>');
  h.push('<details class="raw"><summary>raw answer</summary><pre>' + esc(uncut(rnd.raw || "", rnd.raw_ref, c.chains[j])) + "</pre></details>");
  const runOut = (run, k) => run.output != null ? diff(run.output, c.task.examples[k].output) :
    "<pre>" + esc((run.error || "") + ": " + (run.message || "")) + "</pre>";
  const test = rnd.test_output != null ? grid(rnd.test_output) : "<pre>" + esc((t.error || "no output") + (t.message ? ": " + t.message : "")) + "</pre>";
  if (rnd.visible_runs)  // several examples: the program's run on each
    h.push(tables(rnd.visible_runs.map((run, k) => ["Example " + (k + 1) + ": output vs example output" +
      (run.error ? " (" + run.error + ")" : " (pass)"), runOut(run, k)]).concat([["New input: output", test]])));
  else h.push(tables([["Public example: output vs example output", runOut(v, 0)], ["New input: output", test]]));
  if (c.hidden.answer != null && rnd.hidden_exact != null)
    h.push('<div class="panel hindsight">' + HS + " new-input output " +
      badge(rnd.hidden_exact ? "right" : "wrong", rnd.hidden_exact ? "pass" : "fail") +
      (rnd.test_output != null && !rnd.hidden_exact ? diff(rnd.test_output, c.hidden.answer) : "") + "</div>");
  return h.join("") + "</div>";
}

function policyTable(c) {
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
  const c = D.cases.find((x) => x.id === id);
  if (!c) { $("case").innerHTML = "<p>No case <code>" + esc(id) + '</code> in this run. <a href="#cases">All cases</a></p>'; return; }
  const list = filtered(), k = list.indexOf(c), h = [], t = totals(c);
  h.push('<div class="casenav"><a href="' + esc(listHash()) + '">← cases</a>' + (k > 0 ? '<a href="' + caseHref(list[k - 1].id) + '">‹ previous</a>' : "") +
    (k >= 0 && k < list.length - 1 ? '<a href="' + caseHref(list[k + 1].id) + '">next ›</a>' : "") +
    (k >= 0 ? '<span class="muted">' + (k + 1) + " of " + list.length + " in the list</span>" : "") + "</div>");
  h.push('<h2 id="case-title">' + esc(c.id) + '</h2><div class="muted">family ' + esc(c.family) + " · split " + esc(c.split) + " · " +
    plural(rounds(c).length, "program attempt", "program attempts") + " · " + num(t.tokens) + " tokens · " + ms(t.gen_ms) +
    " ms generation · " + ms(t.sandbox_ms) + " ms sandbox</div>");
  const ex = c.task.examples, many = ex.length > 1;
  h.push('<div class="panel"><h3>Task (what the model and a controller see)</h3><div class="muted">' + plural(ex.length, "public example", "public examples") +
    " · values: " + esc(c.task.value_type || "table") + (c.task.entry && c.task.entry !== "transform" ? " · entry " + esc(c.task.entry) : "") +
    '</div><div class="examples">' + ex.map((e, k) => tables([[(many ? "Example " + (k + 1) : "Example") + " input", grid(e.input)],
      [(many ? "Example " + (k + 1) : "Example") + " output", grid(e.output)]])).join("") + "</div>" +
    tables([["New input", grid(c.task.test_input)]]) + "</div>");
  const d = c.direct;
  h.push('<div class="panel" id="direct"><h3>Direct answer</h3><div class="badges">' + parseBadge(d.parse) + " " + finishBadge(d.finish_reason) +
    "</div>" + costLine(d, false) + grid(d.value) +
    (!c.prompts.recorded ? '<details class="prompt direct-prompt"><summary>direct prompt the model was sent</summary>' + messages(c.prompts.direct) + "</details>" :
      c.prompts.direct ? '<details class="prompt recorded-prompt"><summary>prompt as recorded with the output' + (d.model ? " (" + esc(d.model) + ")" : "") +
      "</summary>" + messages(c.prompts.direct) + "</details>" : '<p class="muted recorded-prompt">(no prompt recorded with this output)</p>') +
    "<details><summary>raw answer</summary><pre>" + esc(d.raw) + "</pre></details></div>");
  if (c.hidden.answer != null)
    h.push('<div class="panel hindsight" id="hindsight">' + HS + " outcome " + badge(c.outcome) + " direct " + badge(c.hidden.direct_category) +
      tables([["Direct answer vs hidden answer", diff(d.value, c.hidden.answer)], ["Hidden answer", grid(c.hidden.answer)]]) +
      '<div class="muted">failure tags: ' + esc(c.cats.join(", ")) + "</div></div>");
  else h.push('<div class="panel hindsight">' + HS + " this case has no hidden answer (unscored)</div>");
  h.push("<h2>Policies</h2>" + policyTable(c) + "<h2>Attempts</h2>" + attemptTable(c));
  c.chains.forEach((chain, j) => chain.forEach((rnd) => h.push(attempt(c, j, rnd))));
  if (!c.chains.some((ch) => ch.length)) h.push('<p class="muted">(no program attempts)</p>');
  $("case").innerHTML = h.join("");
}
