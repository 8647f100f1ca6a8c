// cairn workflow UI: hash-routed pages over the JSON API of package workflowui.
// No build step; pages poll once a second and streams arrive as server-sent events.
"use strict";
const $ = (sel, el = document) => el.querySelector(sel);
const app = $("#app");
let timer = null, streams = {}, page = null;

const esc = s => String(s ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
const badge = s => `<span class="badge s-${esc(s)}" data-status="${esc(s)}">${esc(s)}</span>`;
const when = t => t ? new Date(t).toLocaleString() : "–";
const terminal = s => s === "completed" || s === "failed" || s === "cancelled";
function dur(a, b) {
  if (!a) return "–";
  const ms = (b ? new Date(b) : new Date()) - new Date(a);
  const txt = ms < 1000 ? ms + " ms" : ms < 60000 ? (ms / 1000).toFixed(2) + " s" : Math.round(ms / 1000) + " s";
  return b ? txt : txt + "…";
}
const pretty = raw => { if (raw == null) return ""; try { return JSON.stringify(raw, null, 2); } catch { return String(raw); } };

async function api(method, path, body) {
  const res = await fetch(path, {method, headers: method === "GET" ? {} : {"Content-Type": "application/json"},
    body: body === undefined ? undefined : (typeof body === "string" ? body : JSON.stringify(body))});
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error?.message || data.error || res.statusText);
  return data;
}
function toast(msg, bad) {
  let t = $("#toast");
  if (!t) { t = document.createElement("div"); t.id = "toast"; document.body.append(t); }
  t.textContent = msg; t.style.display = "block"; t.style.background = bad ? "#c8372d" : "#1d1f21";
  clearTimeout(t._h); t._h = setTimeout(() => t.style.display = "none", 3500);
}
// set replaces an element's HTML only when it changed, so polling does not reset
// scroll positions, open <details> or text being typed.
function set(el, html) { if (el && el._html !== html) { el._html = html; el.innerHTML = html; } }

function stop() {
  clearInterval(timer); timer = null;
  for (const k in streams) streams[k].close();
  streams = {};
}

// ---- run list -------------------------------------------------------------
async function listPage() {
  app.innerHTML = `<h1>Runs</h1>
  <div class="card"><div class="toolbar">
    <label>Workflow <input id="wf" list="wfs" spellcheck="false" placeholder="workflow name"><datalist id="wfs"></datalist></label><span class="spacer"></span>
    <button id="start" class="primary">Start run</button></div>
    <textarea id="input" aria-label="input" spellcheck="false">{}</textarea></div>
  <div class="card"><div class="toolbar"><label>Status <select id="status">
    <option value="">any</option><option>pending</option><option>running</option><option>completed</option><option>failed</option><option>cancelled</option>
  </select></label>
    <label title="Runs holding every pair: key=value, separated by commas">Attributes <input id="attrs" spellcheck="false" placeholder="customer=c7, tier=gold"></label>
  </div><div id="runs"></div></div>`;
  const {workflows} = await api("GET", "api/workflows");
  const wf = $("#wf"), input = $("#input");
  // A datalist offers the workflows of this process; any name can be typed, for
  // workflows whose workers run elsewhere.
  $("#wfs").innerHTML = workflows.map(w => `<option value="${esc(w.name)}"></option>`).join("");
  wf.value = workflows[0]?.name ?? "";
  const example = () => { const w = workflows.find(w => w.name === wf.value); if (w) input.value = w.example ? pretty(w.example) : "{}"; };
  wf.oninput = example; example();
  $("#start").onclick = async () => {
    try {
      if (!wf.value.trim()) throw new Error("name the workflow to start");
      JSON.parse(input.value);
      const {runId} = await api("POST", "api/runs", {workflow: wf.value, input: JSON.parse(input.value)});
      location.hash = "#/runs/" + encodeURIComponent(runId);
    } catch (e) { toast("Start failed: " + e.message, true); }
  };
  $("#status").onchange = refresh;
  $("#attrs").onchange = refresh;
  // The attributes a run shows in the list: its own, not the runtime's (cairn.*).
  const shownAttrs = a => Object.entries(a || {}).filter(([k]) => !k.startsWith("cairn.")).sort(([x], [y]) => x < y ? -1 : 1)
    .map(([k, v]) => `<span class="mono attr">${esc(k)}=${esc(v)}</span>`).join(" ");
  async function refresh() {
    const q = new URLSearchParams({limit: "100"});
    if ($("#status").value) q.set("status", $("#status").value);
    const pairs = $("#attrs").value.split(",").map(p => p.trim()).filter(Boolean);
    for (const p of pairs) q.append("attr", p);
    let data;
    try { data = await api("GET", "api/runs?" + q); } catch (e) { set($("#runs"), `<p class="err">${esc(e.message)}</p>`); return; }
    const none = pairs.length || $("#status").value ? "No runs match." : "No runs yet. Start one above.";
    set($("#runs"), data.items.length === 0 ? `<p class="muted">${none}</p>` :
      `<table><thead><tr><th>Run</th><th>Workflow</th><th>Status</th><th>Created</th><th>Duration</th><th>Attributes</th></tr></thead><tbody>` +
      data.items.map(r => `<tr class="row" data-run="${esc(r.runId)}"><td class="mono"><a href="#/runs/${encodeURIComponent(r.runId)}">${esc(r.runId)}</a></td>
        <td>${esc(r.workflowName)}</td><td>${badge(r.status)}${r.blocked ? ` <span class="badge s-failed" title="${esc(r.blocked.error.message)}">blocked</span>` : ""}</td><td>${when(r.createdAt)}</td><td>${dur(r.startedAt, r.completedAt)}</td><td>${shownAttrs(r.attributes)}</td></tr>`).join("") +
      `</tbody></table>`);
    for (const tr of app.querySelectorAll("tr.row")) tr.onclick = e => { if (e.target.tagName !== "A") location.hash = "#/runs/" + encodeURIComponent(tr.dataset.run); };
  }
  return refresh;
}

// ---- run detail -----------------------------------------------------------
function runLink(id) { return `<a class="mono" href="#/runs/${esc(encodeURIComponent(id))}">${esc(id)}</a>`; }

// links are the summary rows of a run's parent, children and continue-as-new neighbours.
function links(l) {
  return [
    l.parent ? ["Parent", runLink(l.parent)] : null,
    l.continuedFrom ? ["Continued from", runLink(l.continuedFrom)] : null,
    l.continuedAs ? ["Continued as", runLink(l.continuedAs)] : null,
    l.children && l.children.length ? ["Children", `<ul class="children">${l.children.map(c =>
      `<li>${runLink(c.runId)} <span class="muted">${esc(c.workflow)} · ${esc(c.stepId)}</span> ${badge(c.status)}</li>`).join("")}</ul>`] : null,
  ];
}

async function runPage(id) {
  app.innerHTML = `<p><a href="#/">← all runs</a></p>
  <div class="toolbar"><h1 class="mono" id="run-id">${esc(id)}</h1><span id="run-status"></span><span class="spacer"></span>
    <button id="cancel" class="danger">Cancel</button><button id="rerun">Re-run</button></div>
  <div class="card"><div class="kv" id="summary"></div></div>
  <h2>Steps</h2><div class="card timeline" id="steps"></div>
  <h2>Hooks</h2><div class="card" id="hooks"></div>
  <h2>Send signal</h2><div class="card" id="signal-form"><label>Name <input id="signal-name" class="mono" maxlength="128"></label>
    <textarea id="signal-payload" class="mono" rows="2" placeholder='payload as JSON, e.g. {"approved": true}'></textarea>
    <div class="toolbar"><button id="signal-send" class="primary">Send signal</button></div></div>
  <h2>Streams</h2><div class="card" id="streams"></div>
  <h2>Query</h2><div class="card" id="query"><div class="toolbar">
    <label>Handler <input id="query-name" spellcheck="false" placeholder="query name"></label>
    <label>Argument <input id="query-arg" spellcheck="false" placeholder="JSON, e.g. {} (empty: null)"></label>
    <button id="query-send">Query</button></div>
    <p class="muted">Asks the run's code at its current position (workflow.SetQueryHandler); nothing is recorded.</p>
    <pre id="query-result" hidden></pre></div>
  <h2>Events</h2><div class="card"><details id="events-box"><summary>Event log</summary><div id="events"></div></details></div>`;
  $("#cancel").onclick = async () => {
    try { await api("POST", `api/runs/${encodeURIComponent(id)}/cancel`, {}); toast("Run cancelled"); refresh(); }
    catch (e) { toast("Cancel failed: " + e.message, true); }
  };
  $("#rerun").onclick = async () => {
    try { const {runId} = await api("POST", `api/runs/${encodeURIComponent(id)}/rerun`); location.hash = "#/runs/" + encodeURIComponent(runId); }
    catch (e) { toast("Re-run failed: " + e.message, true); }
  };
  $("#hooks").addEventListener("click", async e => {
    const btn = e.target.closest("button.resume");
    if (!btn) return;
    const box = btn.closest(".hook"), ta = $("textarea", box);
    let payload;
    try { payload = JSON.stringify(JSON.parse(ta.value)); } catch (err) { toast("Payload is not JSON: " + err.message, true); return; }
    btn.disabled = true;
    try { await api("POST", `api/hooks/${encodeURIComponent(box.dataset.hook)}/resume`, payload); toast("Hook resumed"); ta.value = ""; refresh(); }
    catch (err) { toast("Resume failed: " + err.message, true); }
    finally { btn.disabled = false; }
  });
  $("#signal-send").onclick = async () => {
    const name = $("#signal-name").value.trim(), raw = $("#signal-payload").value.trim();
    if (!name) { toast("A signal needs a name", true); return; }
    let payload = null;
    try { if (raw) payload = JSON.parse(raw); } catch (err) { toast("Payload is not JSON: " + err.message, true); return; }
    $("#signal-send").disabled = true;
    try { await api("POST", `api/runs/${encodeURIComponent(id)}/signal`, {name, payload}); toast("Signal sent"); $("#signal-payload").value = ""; refresh(); }
    catch (err) { toast("Signal failed: " + err.message, true); }
    finally { $("#signal-send").disabled = false; }
  };
  $("#events-box").ontoggle = refresh;
  $("#query-send").onclick = async () => {
    const out = $("#query-result"), raw = $("#query-arg").value.trim();
    let arg = null;
    try { if (raw) arg = JSON.parse(raw); } catch (err) { toast("Argument is not JSON: " + err.message, true); return; }
    try {
      const {result} = await api("POST", `api/runs/${encodeURIComponent(id)}/query`, {name: $("#query-name").value.trim(), arg});
      out.className = ""; out.textContent = result === null ? "null" : pretty(result);
    } catch (err) { out.className = "err"; out.textContent = err.message; }
    out.hidden = false;
  };

  async function refresh() {
    const v = await api("GET", `api/runs/${encodeURIComponent(id)}`);
    const r = v.run;
    set($("#run-status"), badge(r.status) + (r.blocked ? ` <span class="badge s-failed">blocked</span>` : ""));
    $("#cancel").disabled = terminal(r.status);
    $("#signal-send").disabled = terminal(r.status);
    $("#rerun").disabled = !v.runnable;
    set($("#summary"), [
      ["Workflow", esc(r.workflowName)], ["Created", when(r.createdAt)], ["Duration", dur(r.startedAt, r.completedAt)],
      ["Events", r.eventCount], ["Input", `<pre>${esc(pretty(r.input))}</pre>`],
      r.output !== undefined ? ["Output", `<pre id="run-output">${esc(pretty(r.output))}</pre>`] : null,
      r.error ? ["Error", `<pre class="err">${esc(r.error.message)}${r.error.stack ? "\n\n" + esc(r.error.stack) : ""}</pre>`] : null,
      // The workflow code failed; the run is retried with backoff and goes on once fixed code is deployed.
      r.blocked ? ["Blocked", `<div id="run-blocked">since ${when(r.blocked.since)}, last ${when(r.blocked.at)}: workflow code failed; retried until fixed code is deployed</div><pre class="err">${esc(r.blocked.error.message)}${r.blocked.error.stack ? "\n\n" + esc(r.blocked.error.stack) : ""}</pre>`] : null,
      r.attributes ? ["Attributes", `<pre>${esc(pretty(r.attributes))}</pre>`] : null,
      ...links(v.links || {}),
    ].filter(Boolean).map(([k, val]) => `<div>${k}</div><div>${val}</div>`).join(""));
    renderSteps(v);
    renderHooks(v.hooks, v.webhooks);
    renderStreams(v.streams, r);
    if ($("#events-box").open) {
      const ev = await api("GET", `api/runs/${encodeURIComponent(id)}/events`);
      set($("#events"), `<table><thead><tr><th>#</th><th>Time</th><th>Type</th><th>Correlation</th></tr></thead><tbody>` +
        ev.items.map(e => `<tr><td>${e.seq}</td><td>${when(e.createdAt)}</td><td class="mono">${esc(e.type)}</td><td class="mono">${esc(e.correlationId || "")}</td></tr>`).join("") + `</tbody></table>`);
    }
  }
  function renderSteps(v) {
    const r = v.run, steps = v.steps;
    if (!steps.length) { set($("#steps"), `<p class="muted">No steps yet.</p>`); return; }
    const t0 = new Date(r.startedAt || r.createdAt).getTime();
    const ends = steps.map(s => new Date(s.completedAt || s.updatedAt).getTime());
    const t1 = Math.max(r.completedAt ? new Date(r.completedAt).getTime() : Date.now(), ...ends, t0 + 1);
    const pos = t => (((new Date(t).getTime()) - t0) / (t1 - t0)) * 100;
    // bars draws one segment per attempt (retried attempts in amber), or the step's span.
    const bars = (s, a, b) => {
      const list = v.attempts[s.stepId] || [];
      if (!list.length) return `<div class="bar s-${esc(s.status)}" style="left:${pos(a).toFixed(2)}%;width:${Math.max(pos(b) - pos(a), 0.5).toFixed(2)}%"></div>`;
      return list.map(x => { const l = pos(x.startedAt), r = pos(x.endedAt || (terminal(v.run.status) ? s.updatedAt : Date.now()));
        return `<div class="bar s-${x.outcome === "retrying" ? "pending" : esc(x.outcome === "running" ? "running" : x.outcome)}" title="attempt ${x.attempt}: ${esc(x.outcome)}" style="left:${l.toFixed(2)}%;width:${Math.max(r - l, 0.5).toFixed(2)}%"></div>`; }).join("");
    };
    const waitRows = v.waits.map(w => [w.createdAt, `<div class="step wait" data-wait="${esc(w.waitId)}"><div><b>sleep</b> ${badge(w.completedAt ? "completed" : "waiting")}<div class="muted mono">${esc(w.waitId)}</div></div>
      <div class="track"><div class="bar s-cancelled" style="left:${pos(w.createdAt).toFixed(2)}%;width:${Math.max(pos(w.completedAt || w.resumeAt) - pos(w.createdAt), 0.5).toFixed(2)}%"></div></div>
      <div>${dur(w.createdAt, w.completedAt)}<div class="muted">until ${when(w.resumeAt)}</div></div></div>`]);
    set($("#steps"), steps.map(s => {
      const a = new Date(s.startedAt || s.createdAt).getTime(), b = s.completedAt ? new Date(s.completedAt).getTime() : (terminal(r.status) ? new Date(s.updatedAt).getTime() : Date.now());
      const left = ((a - t0) / (t1 - t0)) * 100, width = Math.max(((b - a) / (t1 - t0)) * 100, 0.5);
      return [s.createdAt, `<div class="step" data-step="${esc(s.stepId)}" data-status="${esc(s.status)}">
        <div><b>${esc(s.stepName)}</b> ${badge(s.status)}<div class="muted mono">${esc(s.stepId)}</div></div>
        <div class="track">${bars(s, a, b)}</div>
        <div>${dur(s.startedAt, s.completedAt)}<div class="muted">attempt ${s.attempt}${s.retryAt ? " · retry " + when(s.retryAt) : ""}</div></div>
        ${(v.attempts[s.stepId] || []).filter(x => x.error).map(x => `<div class="err attempt-error" style="grid-column:1/-1">attempt ${x.attempt} ${esc(x.outcome === "retrying" ? "failed, retried" : x.outcome)} after ${dur(x.startedAt, x.endedAt)}: ${esc(x.error.message)}</div>`).join("")}
        ${s.error && !(v.attempts[s.stepId] || []).some(x => x.error) ? `<div class="err" style="grid-column:1/-1">${esc(s.error.message)}</div>` : ""}
        <details><summary>input / output</summary><pre>${esc(pretty(s.input))}</pre>${s.output !== undefined ? `<pre>${esc(pretty(s.output))}</pre>` : ""}</details></div>`];
    }).concat(waitRows).sort((x, y) => new Date(x[0]) - new Date(y[0])).map(x => x[1]).join(""));
  }
  function renderHooks(hooks, webhooks) {
    const el = $("#hooks");
    if (!hooks.length) { set(el, `<p class="muted">No hooks.</p>`); return; }
    const typed = {};
    for (const ta of el.querySelectorAll(".hook textarea")) typed[ta.closest(".hook").dataset.hook] = ta.value;
    set(el, hooks.map(h => `<div class="hook card" data-hook="${esc(h.hookId)}"${h.tokenHidden ? "" : ` data-token="${esc(h.token)}"`}>
      <div class="toolbar"><b class="mono">${esc(h.tokenHidden ? h.hookId : h.token)}</b> ${badge(h.status)} <span class="muted">received ${h.received}</span>
      ${h.tokenHidden ? `<span class="muted token-hidden">token hidden (--show-tokens shows it)</span>` : ""}</div>
      ${h.metadata !== undefined ? `<pre>${esc(pretty(h.metadata))}</pre>` : ""}
      ${h.status === "active" ? `<textarea spellcheck="false" placeholder='JSON payload, e.g. {"ok": true}'></textarea>
      <div class="toolbar"><button class="resume primary">Resume</button>
      ${webhooks && !h.tokenHidden ? `<span class="muted">or <code>curl -X POST ${esc(new URL("v1/workflow/webhooks/" + encodeURIComponent(h.token), document.baseURI).href)} -d '{}'</code></span>` : ""}</div>` : ""}</div>`).join(""));
    for (const ta of el.querySelectorAll(".hook textarea")) { const v = typed[ta.closest(".hook").dataset.hook]; if (v !== undefined) ta.value = v; }
  }
  function renderStreams(list, r) {
    const el = $("#streams");
    if (!list.length && !el.querySelector(".stream")) { set(el, `<p class="muted">No streams${terminal(r.status) ? "" : " yet"}.</p>`); return; }
    if (el._html) { el._html = null; el.innerHTML = ""; }
    for (const s of list) {
      if (streams[s.name] || el.querySelector(`.stream[data-stream="${CSS.escape(s.name)}"]`)) continue;
      const box = document.createElement("div");
      box.className = "stream"; box.dataset.stream = s.name;
      box.innerHTML = `<div class="toolbar"><b class="mono">${esc(s.name)}</b><span class="muted state">live</span></div><pre></pre>`;
      el.append(box);
      const pre = $("pre", box), src = new EventSource(`api/runs/${encodeURIComponent(id)}/streams/${encodeURIComponent(s.name)}`);
      streams[s.name] = src;
      src.addEventListener("chunk", e => {
        const c = JSON.parse(e.data);
        pre.textContent += (c.text ?? atob(c.data || "")) + "\n";
        pre.scrollTop = pre.scrollHeight;
      });
      src.addEventListener("closed", () => { src.close(); $(".state", box).textContent = "closed"; });
      src.onerror = () => { $(".state", box).textContent = "reconnecting…"; };
    }
  }
  return refresh;
}

async function route() {
  stop();
  const m = location.hash.match(/^#\/runs\/(.+)$/);
  const current = page = Symbol();
  try {
    const refresh = m ? await runPage(decodeURIComponent(m[1])) : await listPage();
    const tick = async () => {
      if (current !== page) return;
      try { await refresh(); $("#conn").textContent = ""; }
      catch (e) { $("#conn").textContent = "⚠ " + e.message; }
    };
    await tick();
    timer = setInterval(tick, 1000);
  } catch (e) { app.innerHTML = `<p class="err">${esc(e.message)}</p><p><a href="#/">← all runs</a></p>`; }
}
window.addEventListener("hashchange", route);
route();
