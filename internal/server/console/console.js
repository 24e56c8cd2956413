// The agentslice console: one client of the server's HTTP API and event
// streams (see the README's "Events" table). No dependencies, no build;
// render.js holds how events are drawn.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  token: sessionStorage.getItem("agentslice-token") || "",
  thread: "",       // the selected thread
  status: "",       // its status ("new" before its first commit)
  stream: null,     // its EventSource
  global: null,     // EventSource of every thread (refreshes the tree)
  usage: { input: 0, output: 0, total: 0 },
  streaming: null,  // {completion, li, text}
  calls: new Map(), // call_id → the <details> of a tool call
  sends: new Map(), // message ID → the <li> of a message sent, not yet committed
  agents: [],       // GET /agents
  defaultAgent: "",
  models: [],       // GET /models
  defaultModel: "",
  newAgent: {},     // thread → the agent picked when it was started
  cursor: "",       // the tree's next page, when the server pages
  stateEvents: 0,   // "state" events seen: a slower GET does not undo them
  treeTimer: 0,
  inherited: 0,     // how many of the thread's items come from its ancestors (or fork source)
};

// ACTIVE are the statuses with something to stop: a completion, a tool
// call, a choice, a sleep. A watching thread (a subscription active, a
// background command or a watch, and nothing else) is busy but has none:
// Stop interrupts a pending call only; Close ends the thread.
const ACTIVE = new Set(["running", "waiting_for_tool", "waiting_for_choice", "sleeping"]);

async function api(method, path, body) {
  const headers = {};
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (resp.status === 401) {
    $("token-form").hidden = false;
    throw new Error("a token is required");
  }
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) throw new Error(data.error || resp.statusText);
  return data;
}

function streamURL(path) {
  return state.token ? path + (path.includes("?") ? "&" : "?") + "access_token=" + encodeURIComponent(state.token) : path;
}

function setConn(text, live) {
  const c = $("conn");
  c.textContent = text;
  c.classList.toggle("live", !!live);
}

function randomID(prefix) {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return prefix + [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

function label(status) {
  return (status || "").replaceAll("_", " ");
}

// ---- agents and models ----

async function loadCatalogs() {
  try {
    const a = await api("GET", "/agents");
    state.agents = a.agents || [];
    state.defaultAgent = a.default || "";
  } catch (e) { state.agents = []; }
  try {
    const m = await api("GET", "/models");
    state.models = m.models || [];
    state.defaultModel = m.default || "";
  } catch (e) { state.models = []; }
  const pick = $("new-thread-agent");
  pick.replaceChildren(...state.agents.map((a) => el("option", { value: a.name, text: a.name + (a.name === state.defaultAgent ? " (default)" : "") })));
  pick.value = state.defaultAgent;
  $("new-thread-agent-row").hidden = state.agents.length === 0;
  fillSwitches({});
}

// fillSwitches shows the thread's agent and model in the thread head's
// pickers (a switch is offered when there is something to switch to).
function fillSwitches(th) {
  const st = (th && th.state) || {};
  const agent = st.agent || (st.version > 0 ? state.defaultAgent : state.newAgent[state.thread] || state.defaultAgent);
  const as = $("agent-switch");
  as.replaceChildren(...state.agents.map((a) => el("option", { value: a.name, text: a.name })));
  as.value = agent;
  $("agent-switch-box").hidden = state.agents.length < 2 || !state.thread;
  const agentModel = (state.agents.find((a) => a.name === agent) || {}).model;
  const ms = $("model-switch");
  ms.replaceChildren(...state.models.map((m) => el("option", { value: m.name, text: m.name })));
  ms.value = st.model || agentModel || state.defaultModel;
  $("model-switch-box").hidden = state.models.length < 2 || !state.thread;
}

// refreshSwitchesSoon reads the thread again once it exists (its agent
// is bound at its first commit).
let switchesTimer = 0;
function refreshSwitchesSoon() {
  if (switchesTimer) return;
  switchesTimer = setTimeout(() => { switchesTimer = 0; refreshThread(); }, 200);
}

// ---- the thread tree ----

function treeQuery(cursor) {
  const p = new URLSearchParams({ limit: "100" });
  const q = $("thread-search").value.trim();
  if (q) p.set("q", q);
  if (cursor) p.set("cursor", cursor);
  return "/threads?" + p.toString();
}

async function loadTree(more) {
  let data;
  try {
    data = await api("GET", treeQuery(more ? state.cursor : ""));
  } catch (e) {
    setConn(e.message);
    return;
  }
  const tree = $("tree");
  const nodes = data.threads.map(node);
  if (more) tree.append(...nodes);
  else tree.replaceChildren(...nodes);
  state.cursor = data.next_cursor || "";
  $("tree-more").hidden = !state.cursor;
  filterTree();
  loadDead();
  loadAgents();
}

function node(n) {
  const title = n.title || n.id;
  const b = el("button", { type: "button", title: n.title ? n.id : null, "aria-current": n.id === state.thread ? "true" : "false", onclick: () => select(n.id) },
    el("span", { class: "id", text: title }),
    n.agent ? el("span", { class: "agent", text: n.agent }) : null,
    el("span", { class: "status " + n.status, title: n.reason || null, text: label(n.status) }));
  const li = el("li", { "data-thread": n.id, "data-search": [n.id, n.title, n.agent].filter(Boolean).join(" ").toLowerCase() }, b);
  if (n.children && n.children.length) li.append(el("ul", {}, ...n.children.map(node)));
  return li;
}

// filterTree hides the threads that do not match the search box (a
// thread stays when one of its children matches). The server narrows
// the list with ?q= when it can; this works either way.
function filterTree() {
  const q = $("thread-search").value.trim().toLowerCase();
  const tree = $("tree");
  const walk = (li) => {
    let shown = !q || li.dataset.search.includes(q);
    for (const c of li.querySelectorAll(":scope > ul > li")) shown = walk(c) || shown;
    li.hidden = !shown;
    return shown;
  };
  let any = false;
  for (const li of tree.querySelectorAll(":scope > li[data-thread]")) any = walk(li) || any;
  tree.querySelector(":scope > li.sys")?.remove();
  if (!any) tree.append(el("li", { class: "sys", text: q ? "no thread matches" : "no threads yet" }));
}

// refreshTreeSoon reloads the tree within a second, at most once a second
// however many events arrive.
function refreshTreeSoon() {
  if (state.treeTimer) return;
  state.treeTimer = setTimeout(() => { state.treeTimer = 0; loadTree(); }, 1000);
}

// treeStatus shows a thread's new status in the tree at once.
function treeStatus(thread, status) {
  const b = document.querySelector(`#tree li[data-thread="${CSS.escape(thread)}"] > button > .status`);
  if (!b) return false;
  b.className = "status " + status;
  b.textContent = label(status);
  return true;
}

async function loadDead() {
  let data;
  try { data = await api("GET", "/dead_letters"); } catch (e) { return; } // shown by the tree
  const list = $("dead");
  list.replaceChildren(...data.dead_letters.slice(-50).reverse().map(deadEntry));
  if (data.dead_letters.length === 0) list.append(el("li", { class: "sys", text: "none" }));
}

function deadEntry(d) {
  const m = d.message;
  // status: open, redriven, or resolved (its ID was consumed since).
  const resolved = d.resolved || d.status === "resolved";
  const li = el("li", { class: resolved ? "resolved" : "", title: d.at ? new Date(d.at).toLocaleString() : null },
    el("strong", { text: m.thread_id + ": " }), d.reason + (d.times > 1 ? " (" + d.times + "×)" : ""));
  if (resolved) {
    li.append(el("span", { class: "sys", text: " resolved" }));
    return li;
  }
  if (d.status === "redriven") li.append(el("span", { class: "sys", text: " redriven" }));
  const act = (method, suffix, what) => async () => {
    try {
      await api(method, "/dead_letters/" + encodeURIComponent(m.id) + suffix + "?thread=" + encodeURIComponent(m.thread_id));
      loadDead();
    } catch (e) {
      li.append(el("div", { class: "sys error", text: what + " failed: " + e.message }));
    }
  };
  li.append(el("div", { class: "row" },
    el("button", { type: "button", onclick: act("POST", "/redrive", "redrive") }, "Redrive"),
    el("button", { type: "button", onclick: act("DELETE", "", "delete") }, "Delete")));
  return li;
}

function watchAll() {
  if (state.global) state.global.close();
  const es = new EventSource(streamURL("/events?kinds=state,dead_letter,error"));
  es.onopen = () => setConn("live", true);
  // An "error" event from the server has data; a lost connection has none.
  es.onerror = (e) => { if (!e.data) setConn("reconnecting…"); };
  es.addEventListener("state", (m) => {
    const ev = m.data && JSON.parse(m.data);
    if (!ev || !ev.state || !treeStatus(ev.thread_id, ev.state.status)) refreshTreeSoon();
  });
  for (const k of ["dead_letter", "error"]) es.addEventListener(k, refreshTreeSoon);
  state.global = es;
}

// ---- one thread ----

function select(id) {
  if (!id) return;
  if (location.hash !== "#" + encodeURIComponent(id)) history.replaceState(null, "", "#" + encodeURIComponent(id));
  state.thread = id;
  state.usage = { input: 0, output: 0, total: 0 };
  state.budget = null;
  state.streaming = null;
  state.calls = new Map();
  state.sends = new Map();
  $("thread-title").textContent = id;
  $("thread-title").title = "";
  $("log").replaceChildren();
  $("views").replaceChildren();
  $("views").hidden = true;
  $("timeline").hidden = true;
  $("sandbox").hidden = true;
  showState({ status: "" });
  renderUsage();
  for (const b of document.querySelectorAll("#tree button")) {
    b.setAttribute("aria-current", b.parentElement.dataset.thread === id ? "true" : "false");
  }
  refreshThread();
  if (state.stream) state.stream.close();
  // A fresh stream replays the whole history, then goes on live; when the
  // browser reconnects it sends Last-Event-ID and gets only what it missed.
  const es = new EventSource(streamURL("/threads/" + encodeURIComponent(id) + "/events"));
  for (const kind of Object.keys(render)) {
    es.addEventListener(kind, (m) => {
      if (state.stream !== es || !m.data) return; // a lost connection also fires "error"
      render[kind](JSON.parse(m.data));
    });
  }
  // The thread's status comes from GET /threads/{id} and then from state
  // events; the replay above brings history but not the status. A slice
  // that committed after the first GET and before the stream subscribed
  // would leave the status shown as the GET saw it ("new" while the thread
  // sleeps), so the status is read again once the stream is open (the
  // server subscribes before it answers): from then on every change
  // arrives as an event. Also after a reconnect, for what it missed.
  es.addEventListener("open", () => { if (state.stream === es) refreshThread(); });
  state.stream = es;
}

async function refreshThread() {
  const id = state.thread;
  const seen = state.stateEvents;
  let th;
  try {
    th = await api("GET", "/threads/" + encodeURIComponent(id));
  } catch (e) { // no history yet (404): new, unless its stream says more
    if (id !== state.thread) return;
    if (state.status === "" || state.status === "new") showState({ status: "new" });
    fillSwitches({});
    return;
  }
  if (id !== state.thread) return;
  state.inherited = th.inherited || 0;
  if (th.title) {
    $("thread-title").textContent = th.title;
    $("thread-title").title = id;
  }
  if (state.stateEvents === seen) { // else the stream told a newer status meanwhile
    showState({ status: th.status, reason: th.reason || (th.state && th.state.reason), until: th.until,
      pending: th.state && th.state.pending, subscriptions: th.state && th.state.subscriptions });
  }
  fillSwitches(th);
  state.budget = th.budget || null;
  renderUsage();
  loadTimeline();
  loadSandbox(th);
}

async function loadTimeline() {
  const id = state.thread;
  let tl;
  try {
    tl = await api("GET", "/threads/" + encodeURIComponent(id) + "/timeline");
  } catch (e) {
    if (id === state.thread) $("timeline").hidden = true;
    return;
  }
  if (id === state.thread) renderTimeline($("timeline"), tl);
}

function refreshTimelineSoon() {
  if (state.timelineTimer) return;
  state.timelineTimer = setTimeout(() => { state.timelineTimer = 0; loadTimeline(); }, 300);
}

async function loadAgents() {
  try {
    renderAgents($("agents-overview"), await api("GET", "/stats?by=agent"));
  } catch (e) { /* the overview is optional: the threads are what matters */ }
}

// showState shows the thread's status; partial (a slice started) leaves
// the pending call and subscriptions as they are.
function showState(st, partial) {
  const was = state.status;
  state.status = st.status || "";
  const s = $("thread-status");
  s.className = "status " + state.status;
  s.title = st.reason || "";
  s.textContent = label(state.status) + (state.status === "sleeping" && st.until ? " until " + new Date(st.until).toLocaleString() : "");
  const active = ACTIVE.has(state.status);
  $("stop").disabled = !active;
  $("close").disabled = !active && state.status !== "watching";
  $("composer-text").disabled = !state.thread || state.status === "closed";
  updateSend();
  const exists = state.status && state.status !== "new";
  $("agent-switch").disabled = !exists || state.status === "closed";
  $("model-switch").disabled = !exists || state.status === "closed";
  if (exists && (was === "new" || was === "")) refreshSwitchesSoon();
  if (partial) return;
  const p = $("pending");
  const parts = [];
  if (st.reason && state.status === "failed") parts.push(el("div", { class: "error" }, el("strong", { text: "Failed: " }), st.reason));
  if (st.pending) parts.push(el("div", {}, el("strong", { text: state.status === "sleeping" ? "Sleeping: " : "Waiting for: " }),
    st.pending.name + " " + (st.pending.args || "")));
  for (const sub of st.subscriptions || []) parts.push(el("div", {}, el("strong", { text: "Subscribed: " }), sub.tool + " " + (sub.args || "")));
  p.replaceChildren(...parts);
  p.hidden = parts.length === 0;
}

function updateSend() {
  const box = $("composer-text");
  $("send").disabled = box.disabled || !box.value.trim();
}

function renderUsage() {
  const u = state.usage;
  let text = u.total || u.input || u.output ? `tokens: ${u.input} in, ${u.output} out` : "";
  // The budget as GET /threads/{id} last told it (docs/budgets.md).
  const b = state.thread && state.budget;
  if (b) {
    if (b.spent.usd > 0) text += ` · $${b.spent.usd.toFixed(4)}`;
    if (b.limit) text += ` of ${limitText(b.limit)}`;
    const t = b.tree;
    if (t && t.limit) text += ` · tree $${t.spent.usd.toFixed(4)}, ${t.spent.tokens} tokens of ${limitText(t.limit)}`;
    if (b.waiting) text += ` · waiting on the ${b.waiting} budget`;
  }
  $("usage").textContent = text;
}

function limitText(l) {
  const parts = [];
  if (l.tokens) parts.push(`${l.tokens} tokens`);
  if (l.usd) parts.push(`$${l.usd}`);
  return parts.join(" / ");
}

// scroller is what scrolls the conversation: the log, or at phone width
// the page.
function scroller() {
  const log = $("log");
  return getComputedStyle(log).overflowY === "visible" ? document.scrollingElement : log;
}

// forkButton gives a history item's <li> its "fork from here" button.
function forkButton(li) {
  if (li.tagName !== "LI" || !/#\d+$/.test(li.dataset.id || "") || li.querySelector(":scope > button.fork")) return;
  li.append(el("button", { class: "fork", type: "button", title: "fork a new thread with the history up to here", text: "fork from here" }));
}

function add(li) {
  forkButton(li);
  const log = $("log");
  const sc = scroller();
  const stick = sc.scrollHeight - sc.scrollTop - sc.clientHeight < 60;
  if (state.streaming && state.streaming.li.isConnected) log.insertBefore(li, state.streaming.li);
  else log.append(li);
  if (stick) sc.scrollTop = sc.scrollHeight;
  return li;
}

function bubble(cls, who, ev) {
  return add(el("li", { class: "msg " + cls, "data-id": ev && ev.id, "data-kind": ev && ev.kind }, el("span", { class: "who", text: who })));
}

function sys(text, ev, error) {
  const li = add(el("li", { class: "sys" + (error ? " error" : ""), "data-id": ev && ev.id, "data-kind": ev && ev.kind, text }));
  stamp(li, ev);
  return li;
}

function endStreaming() {
  if (state.streaming) state.streaming.li.remove();
  state.streaming = null;
}

function toolCall(ev, title) {
  const mark = el("span", { class: "mark", text: ev.kind === "sleep" ? "sleeping…" : "running…" });
  const d = el("details", { class: "tool", "data-id": ev.id, "data-kind": ev.kind, "data-call": ev.call_id, "data-state": "pending" },
    el("summary", {}, el("span", { class: "name", text: title }), mark), el("pre", { class: "args", text: pretty(ev.args) }));
  state.calls.set(ev.call_id, d);
  const li = add(el("li", {}, d));
  stamp(d, ev);
  return li;
}

// output appends a subscription's event to its block: the events of one
// call in a row (a command's output) read as one text.
function output(ev, heading) {
  const log = $("log");
  const last = state.streaming && state.streaming.li.isConnected ? state.streaming.li.previousElementSibling : log.lastElementChild;
  const text = resultText(ev);
  if (last && last.dataset.kind === ev.kind && last.dataset.call === (ev.call_id || "") && last.dataset.heading === heading) {
    last.querySelector("pre").textContent += text;
    last.dataset.id += " " + ev.id;
    return;
  }
  const li = add(el("li", { class: "event", "data-id": ev.id, "data-kind": ev.kind, "data-call": ev.call_id || "", "data-heading": heading },
    el("span", { class: "who", text: heading }), el("pre", { class: "out", text })));
  stamp(li, ev);
}

function choiceCard(ev) {
  const c = ev.choice;
  const card = el("div", { class: "choice", role: "group", "aria-label": "A choice to make", "data-call": c.call_id }, el("strong", { text: c.prompt }));
  card.choices = c.choices; // for the answer recorded in history (choice_answered)
  const opts = el("div", { class: "options" });
  c.choices.forEach((text, i) => {
    opts.append(el("button", { type: "button", class: i === c.default ? "primary" : "", onclick: async () => {
      for (const b of opts.querySelectorAll("button")) b.disabled = true;
      try {
        await api("POST", "/threads/" + encodeURIComponent(ev.thread_id) + "/choices/" + encodeURIComponent(c.call_id), { selected: i });
        try { localStorage.setItem(choiceKey(ev.thread_id, c.call_id), text); } catch (e) { /* private mode */ }
        opts.replaceWith(el("div", { class: "answer", text: "You chose: " + text }));
      } catch (err) {
        for (const b of opts.querySelectorAll("button")) b.disabled = false;
        card.append(el("div", { class: "sys error", text: err.message }));
      }
    } }, text));
  });
  card.append(opts);
  return card;
}

// answeredCard shows a choice that is no longer waiting: its prompt, the
// options, and the answer when known.
function answeredCard(ev) {
  const c = choiceFromText(ev.text);
  if (!c) return el("div", { class: "sys", text: ev.text });
  const answer = answeredChoice(ev, c);
  return el("div", { class: "choice answered", role: "group", "aria-label": "A choice made" }, el("strong", { text: c.prompt }),
    el("ul", { class: "options" }, ...c.choices.map((t) => el("li", { class: t === answer ? "chosen" : "", text: t }))),
    el("div", { class: "answer", text: answer ? "You chose: " + answer : "answered (the answer is not recorded here)" }));
}

// render has one function per event kind of the README's table.
const render = {
  message(ev) {
    const pending = ev.input && state.sends.get(ev.input);
    if (pending) { // the message this page sent, now committed: it keeps its place
      state.sends.delete(ev.input);
      pending.classList.remove("pending");
      pending.dataset.id = ev.id;
      forkButton(pending);
      pending.querySelector(".who").textContent = "you";
      stamp(pending, ev);
      return;
    }
    const li = bubble("user", "you", ev);
    li.append(el("div", { class: "text", text: ev.text }));
    stamp(li, ev);
  },
  delta(ev) {
    let s = state.streaming;
    if (!s || s.completion !== ev.completion_id || !s.li.isConnected) {
      if (s) s.li.remove();
      const li = el("li", { class: "msg assistant streaming", "data-kind": "streaming" }, el("span", { class: "who", text: "agent (typing)" }), el("div", { class: "text" }));
      $("log").append(li);
      s = state.streaming = { completion: ev.completion_id, li, text: "" };
    }
    if (ev.index === 0 || !ev.index) s.text = "";
    s.text += ev.text;
    s.li.lastChild.textContent = s.text;
    const sc = scroller();
    sc.scrollTop = sc.scrollHeight;
  },
  turn(ev) {
    endStreaming();
    if (!ev.text && !ev.reasoning) return;
    const li = bubble("assistant", "agent", ev);
    if (ev.reasoning) li.append(el("details", { class: "reasoning" }, el("summary", { text: "reasoning" }), el("pre", { class: "out", text: ev.reasoning })));
    const body = el("div", { class: "text" });
    li.append(body);
    markdownInto(body, ev.text || "");
    stamp(li, ev);
  },
  usage(ev) {
    const u = ev.usage || {};
    state.usage.input += u.input || 0;
    state.usage.output += u.output || 0;
    state.usage.total += u.total || 0;
    renderUsage();
  },
  tool_call(ev) { endStreaming(); toolCall(ev, ev.tool + " " + short(ev.args)); },
  tool_result(ev) {
    const d = state.calls.get(ev.call_id);
    const body = resultBody(ev);
    const o = outcome(ev);
    if (d) {
      d.append(body);
      d.dataset.state = o.state;
      d.classList.toggle("error", o.state === "failed");
      d.querySelector(".mark").textContent = o.label;
      if ((ev.display || []).length || o.state === "failed") d.open = true;
      stamp(d, ev, d.dataset.time ? new Date(d.dataset.time) : null);
    } else {
      const orphan = el("details", { class: "tool" + (o.state === "failed" ? " error" : ""), open: true, "data-state": o.state },
        el("summary", {}, el("span", { class: "name", text: (ev.tool || "tool") + " result" }), el("span", { class: "mark", text: o.label })), body);
      add(el("li", {}, orphan));
      stamp(orphan, ev);
    }
  },
  sleep(ev) { endStreaming(); toolCall(ev, ev.tool + " " + short(ev.args)); },
  wake(ev) { render.tool_result(ev); },
  child_spawned(ev) {
    render.tool_result(ev);
    add(el("li", { class: "sys", "data-id": ev.id, "data-kind": ev.kind }, "spawned ",
      el("a", { href: "#" + encodeURIComponent(ev.child), text: ev.child })));
  },
  child_report(ev) { output(ev, "report from " + ev.child); },
  subscription_event(ev) {
    output(ev, (ev.tool ? "output of " + ev.tool : "event") + (ev.child ? " (handed to " + ev.child + ")" : ""));
  },
  late_result(ev) { output(ev, "late result of " + ev.tool); },
  user_choice(ev) {
    const li = add(el("li", { "data-id": ev.id, "data-kind": ev.kind }));
    li.append(ev.choice ? choiceCard(ev) : answeredCard(ev));
    stamp(li, ev);
  },
  choice_answered(ev) { // history says the choice was answered: no buttons for it (after a reload too)
    const card = document.querySelector(`.choice[data-call="${CSS.escape(ev.call_id)}"]`);
    if (!card) return;
    let selected = null;
    try { selected = JSON.parse(ev.args || "{}").selected; } catch (e) { /* an answer recorded without its index */ }
    const choices = card.choices || [];
    const answer = selected != null && choices[selected] != null ? choices[selected] : null;
    const done = el("div", { class: "answer", text: answer ? "You chose: " + answer : ev.text });
    const opts = card.querySelector(".options");
    if (opts) opts.replaceWith(done);
    else if (!card.querySelector(".answer")) card.append(done);
    card.classList.add("answered");
  },
  oauth(ev) {
    const url = (ev.text.match(/https?:\/\/\S+/) || [""])[0];
    add(el("li", { class: "sys", "data-id": ev.id, "data-kind": ev.kind }, "The tool needs authorization: ",
      url ? el("a", { href: url, target: "_blank", rel: "noopener", text: url }) : ev.text));
  },
  stopped(ev) { endStreaming(); sys(ev.text, ev); },
  closed(ev) { endStreaming(); sys(ev.text, ev); },
  model_switched(ev) { sys(ev.text, ev); refreshThread(); },
  agent_switched(ev) { sys(ev.text, ev); refreshThread(); },
  compaction(ev) {
    add(el("li", { class: "sys", "data-id": ev.id, "data-kind": ev.kind }, el("details", {}, el("summary", { text: "earlier history was summarised" }), el("pre", { class: "out", text: ev.text }))));
  },
  continue(ev) { /* a slice continued in the next one: nothing to show */ },
  marker(ev) { if (ev.text) sys(ev.text, ev); },
  state(ev) {
    if (!ev.state) return;
    state.stateEvents++;
    showState(ev.state, ev.id.endsWith(".run"));
    treeStatus(ev.thread_id, ev.state.status);
    if (!ev.id.endsWith(".run")) refreshTimelineSoon();
  },
  error(ev) {
    endStreaming();
    // A reply the user stopped is no failure: the stop is theirs.
    if (/stopped by the user$/.test(ev.text || "")) sys("the reply was stopped", ev);
    else sys("error: " + ev.text, ev, true);
  },
  failed(ev) {
    // A completion that failed for good, as history keeps it (after a
    // reload too); live, the error event with the same text came first.
    endStreaming();
    const last = $("log").lastElementChild;
    if (last && last.dataset.kind === "error" && last.textContent === "error: " + ev.text) {
      last.dataset.kind = "failed";
      return;
    }
    sys("failed: " + ev.text, ev, true);
  },
  dead_letter(ev) {
    add(el("li", { class: "dead-card", "data-id": ev.id, "data-kind": ev.kind },
      el("strong", { text: "Dead letter " }), (ev.message ? ev.message.id + ": " : "") + ev.text));
  },
  view(ev) {
    let v;
    try { v = JSON.parse(ev.text); } catch (e) { return; }
    const views = $("views");
    let box = views.querySelector(`[data-view="${CSS.escape(v.view_type)}"]`);
    if (emptyView(v.content)) { // the tool cleared it
      if (box) box.remove();
      views.hidden = !views.firstChild;
      return;
    }
    if (!box) {
      box = el("details", { "data-view": v.view_type, open: true });
      views.append(box);
    }
    box.replaceChildren(el("summary", { text: "View: " + v.view_type }), el("div", { class: "view-body" }, viewBody(v.view_type, v.content)));
    views.hidden = false;
  },
  reset(ev) {
    $("log").replaceChildren();
    state.calls = new Map();
    state.usage = { input: 0, output: 0, total: 0 };
  },
};

// ---- actions ----

$("composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const box = $("composer-text");
  const text = box.value.trim();
  if (!text || !state.thread || box.disabled) return;
  const thread = state.thread;
  const id = randomID("msg_");
  const body = { text, id };
  if (state.status === "new" && state.newAgent[thread]) body.agent = state.newAgent[thread];
  // The message shows at once; its committed event (input = id) takes
  // its place when the slice commits it.
  const li = bubble("user pending", "you (sending)", { kind: "message" });
  li.append(el("div", { class: "text", text }));
  state.sends.set(id, li);
  box.value = "";
  updateSend();
  try {
    await api("POST", "/threads/" + encodeURIComponent(thread) + "/messages", body);
    if (li.classList.contains("pending")) li.querySelector(".who").textContent = "you (queued)";
    refreshTreeSoon();
    if (state.status === "new") refreshThread();
  } catch (err) {
    state.sends.delete(id);
    li.classList.add("failed");
    li.querySelector(".who").textContent = "you (not sent: " + err.message + ")";
    if (!box.value) box.value = text;
    updateSend();
  } finally {
    box.focus();
  }
});

$("composer-text").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("composer").requestSubmit();
  }
});
$("composer-text").addEventListener("input", updateSend);

for (const action of ["stop", "close"]) {
  $(action).addEventListener("click", async () => {
    const b = $(action);
    if (action === "close" && !b.dataset.armed) { // a second click confirms
      b.dataset.armed = "1";
      b.textContent = "Confirm close";
      setTimeout(() => { delete b.dataset.armed; b.textContent = "Close thread"; }, 5000);
      return;
    }
    delete b.dataset.armed;
    b.textContent = action === "close" ? "Close thread" : "Stop";
    try {
      await api("POST", "/threads/" + encodeURIComponent(state.thread) + "/" + action, {});
    } catch (err) {
      sys(action + " failed: " + err.message, null, true);
    }
  });
}

for (const [what, sel] of [["agent", "agent-switch"], ["model", "model-switch"]]) {
  $(sel).addEventListener("change", async () => {
    const v = $(sel).value;
    try {
      await api("POST", "/threads/" + encodeURIComponent(state.thread) + "/" + what, { [what]: v });
    } catch (err) {
      sys(what + " switch failed: " + err.message, null, true);
      refreshThread();
    }
  });
}

$("new-thread").addEventListener("submit", (e) => {
  e.preventDefault();
  const id = $("new-thread-id").value.trim() || randomID("t-").slice(0, 14);
  if (state.agents.length) state.newAgent[id] = $("new-thread-agent").value;
  select(id);
  $("new-thread-id").value = "";
  $("new-thread-agent").value = state.defaultAgent;
  $("composer-text").focus();
});

let searchTimer = 0;
$("thread-search").addEventListener("input", () => {
  filterTree(); // at once, on what is shown
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => loadTree(), 300); // then the server's answer
});
$("tree-more").addEventListener("click", () => loadTree(true));

$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  state.token = $("token").value;
  sessionStorage.setItem("agentslice-token", state.token);
  $("token-form").hidden = true;
  start();
});

window.addEventListener("hashchange", () => {
  const id = decodeURIComponent(location.hash.slice(1));
  if (id && id !== state.thread) select(id);
});

// forkFrom forks the selected thread after the history item of the event
// whose element holds button b, and opens the fork.
async function forkFrom(b) {
  const item = b.closest("[data-id]");
  const m = item && /#(\d+)$/.exec(item.dataset.id || "");
  if (!m) return;
  b.disabled = true;
  try {
    const f = await api("POST", "/threads/" + encodeURIComponent(state.thread) + "/fork", { at: state.inherited + Number(m[1]) + 1 });
    refreshTreeSoon();
    select(f.thread);
  } catch (e) {
    sys("fork failed: " + e.message, null, true);
    b.disabled = false;
  }
}

async function start() {
  $("log").addEventListener("click", (e) => {
    const b = e.target.closest("button.fork");
    if (b) forkFrom(b);
  });
  loadTree();
  watchAll();
  await loadCatalogs();
  const id = decodeURIComponent(location.hash.slice(1));
  if (id) select(id);
}

start();
