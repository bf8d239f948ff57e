// The dashboard page: once a second it fetches /dashboard/state.json
// (headline figures, topology, which charts apply) and each chart's SVG,
// drawn by the server, and swaps them in. It keeps no data of its own.
"use strict";

const $ = (id) => document.getElementById(id);

// The time range shown, in seconds: chosen in the header, kept across
// visits, sent with every request (the server keeps one hour).
let range = localStorage.getItem("lockstep-range") || "300";
$("range").value = range;
$("range").addEventListener("change", (e) => {
  range = e.target.value;
  localStorage.setItem("lockstep-range", range);
});

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmt(v, digits) {
  if (v === null || v === undefined) return "–";
  return v.toLocaleString(undefined, { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function renderHeadline(items) {
  const box = $("headline");
  box.replaceChildren(...items.map((h) => {
    const f = el("div", "figure");
    const digits = h.label === "commits/s" ? 0 : 2;
    f.append(el("b", "", fmt(h.value, digits)), el("span", "", h.label));
    return f;
  }));
}

function stateClass(ok, warn) { return ok ? "state-ok" : warn ? "state-warn" : "state-bad"; }

function renderTopology(t) {
  $("self").textContent = `server_id ${t.server_id} · ${t.address} · ${t.version}` + (t.read_only ? " · read_only" : "");
  const me = $("this-node");
  me.replaceChildren(el("b", "", "this server"), el("div", "muted", `gtid_executed ${t.gtid_executed || "(empty)"}`));
  const src = $("source-node");
  if (t.source) {
    src.hidden = false;
    const s = t.source;
    const io = el("span", stateClass(s.io_running === "Yes", s.io_running === "Connecting"), `IO ${s.io_running}`);
    const sq = el("span", stateClass(s.sql_running, false), `SQL ${s.sql_running ? "Yes" : "No"}`);
    const lag = s.seconds_behind < 0 ? "NULL" : `${s.seconds_behind} s`;
    const line = el("div");
    line.append(io, " · ", sq, ` · behind ${lag}`);
    src.replaceChildren(el("b", "", `source ${s.host}:${s.port}`), line);
    if (s.last_error) src.append(el("div", "state-bad", s.last_error));
    if (!src.nextElementSibling.classList.contains("arrow")) src.after(el("span", "arrow", "→"));
  } else {
    src.hidden = true;
  }
  const reps = $("replica-nodes");
  const nodes = t.replicas.map((r) => {
    const n = el("div", "node");
    const name = `replica ${r.server_id}` + (r.host ? ` (${r.host}:${r.port})` : "");
    const kind = `${r.flavor}${r.semi_sync ? ", semi-sync" : ", async"}`;
    const behind = el("span", stateClass(r.behind_bytes === 0, r.behind_bytes < 1 << 20), `${fmt(r.behind_bytes, 0)} bytes behind`);
    const line = el("div");
    line.append(`${kind} · sent ${r.sent}` + (r.acknowledged ? ` · acked ${r.acknowledged}` : "") + " · ", behind);
    if (r.applying === "yes") {
      const lag = r.apply_lag_seconds;
      line.append(" · ", el("span", stateClass(lag < 1, lag < 10), `applies ${fmt(lag, lag < 10 ? 1 : 0)} s behind`));
    } else if (r.applying === "no") {
      line.append(" · ", el("span", "state-bad", "SQL thread stopped"));
    }
    n.append(el("b", "", name), line);
    return n;
  });
  reps.replaceChildren(...nodes);
  let arrow = me.nextElementSibling;
  if (nodes.length > 0 && !(arrow && arrow.classList.contains("arrow"))) me.after(el("span", "arrow", "→"));
  if (nodes.length === 0 && arrow && arrow.classList.contains("arrow")) arrow.remove();
}

async function renderCharts(list) {
  const box = $("charts");
  const want = new Set(list.map((c) => c.id));
  for (const div of [...box.children]) if (!want.has(div.dataset.id)) div.remove();
  await Promise.all(list.map(async (c, i) => {
    let div = box.querySelector(`[data-id="${c.id}"]`);
    if (!div) {
      div = el("div", "chart");
      div.dataset.id = c.id;
      div.setAttribute("role", "img");
      div.setAttribute("aria-label", c.title);
    }
    if (box.children[i] !== div) box.insertBefore(div, box.children[i] || null);
    const w = Math.round(div.clientWidth || 640), h = Math.round(div.clientHeight || 280);
    const resp = await fetch(`/dashboard/chart/${c.id}.svg?w=${w}&h=${h}&range=${range}`, { cache: "no-store" });
    if (!resp.ok) throw new Error(`chart ${c.id}: HTTP ${resp.status}`);
    const svg = await resp.text();
    const doc = new DOMParser().parseFromString(svg, "image/svg+xml");
    const root = doc.documentElement;
    root.removeAttribute("width");
    root.removeAttribute("height");
    div.replaceChildren(document.importNode(root, true));
  }));
}

async function tick() {
  try {
    const resp = await fetch(`/dashboard/state.json?range=${range}`, { cache: "no-store" });
    if (!resp.ok) throw new Error(`state: HTTP ${resp.status}`);
    const st = await resp.json();
    renderHeadline(st.headline);
    renderTopology(st.topology);
    await renderCharts(st.charts);
    $("updated").textContent = `updated ${new Date(st.now).toLocaleTimeString()}`;
    $("error").hidden = true;
    document.body.dataset.ready = "1";
  } catch (e) {
    // The server may be restarting: show it and try again next second.
    $("error").textContent = `no data from the server: ${e.message}`;
    $("error").hidden = false;
  }
  setTimeout(tick, 1000);
}

tick();
