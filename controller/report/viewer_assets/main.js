// The trace viewer, part 5: start-up and routing. Three views picked by the URL hash
// (#overview, #cases[?filters], #case/<id>), so a link to a case or to a filtered list can be shared.

function route() {
  const hash = location.hash.slice(1) || "overview";
  const view = hash.startsWith("case/") ? "case" : hash === "cases" || hash.startsWith("cases?") ? "cases" : "overview";
  for (const v of ["overview", "cases", "case"]) $(v).hidden = v !== view;
  if (view === "cases") loadListState(hash.slice(6));
  $("nav-overview").className = view === "overview" ? "on" : "";
  $("nav-cases").className = view !== "overview" ? "on" : "";
  if (view === "case") { casePage(decodeURIComponent(hash.slice(5))); window.scrollTo(0, 0); }
}

function start(data) {
  D = data;
  const r = D.run;
  $("runline").textContent = [r.case_set, r.backend + (r.model ? " / " + r.model : ""), r.n_records + " cases",
    D.policies.length + " policies"].join(" · ");
  overview();
  setupList();
  renderList();
  // links inside a case page that scroll to one of its attempts (the hash names the case)
  $("case").addEventListener("click", (ev) => {
    const a = ev.target.closest("a[data-goto]");
    if (!a) return;
    ev.preventDefault();
    const el = $(a.dataset.goto);
    if (el) el.scrollIntoView({ block: "start" });
  });
  window.addEventListener("hashchange", route);
  $("loading").remove();
  route();
  document.body.dataset.ready = "1";  // for tests and scripts: the page is drawn
  performance.mark("viewer-ready");
}

if (typeof DecompressionStream === "undefined")
  $("loading").textContent = "This browser cannot unpack the page's data (it needs DecompressionStream: " +
    "Chrome/Edge 80+, Firefox 113+, Safari 16.4+).";
else loadData().then(start, (err) => { $("loading").textContent = "Could not read the page's data: " + err; });
