// The agentslice console: one client of the server's HTTP API and event
// streams (see the README's "Events" table). No dependencies, no build.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  token: sessionStorage.getItem("agentslice-token") || "",
  thread: "",       // the selected thread
  stream: null,     // its EventSource
  global: null,     // EventSource of every thread (refreshes the tree)
  usage: { input: 0, output: 0, total: 0 },
  streaming: null,  // {completion, li, text}
  calls: new Map(), // call_id → the <details> of a tool call
  treeTimer: 0,
};

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}

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

// ---- the thread tree ----

async function loadTree() {
  let data;
  try {
    data = await api("GET", "/threads");
  } catch (e) {
    setConn(e.message);
    return;
  }
  const tree = $("tree");
  tree.replaceChildren(...data.threads.map(node));
  if (data.threads.length === 0) tree.append(el("li", { class: "sys", text: "no threads yet" }));
  loadDead();
}

function node(n) {
  const b = el("button", { type: "button", "aria-current": n.id === state.thread ? "true" : "false", onclick: () => select(n.id) },
    el("span", { class: "id", text: n.id }), el("span", { class: "status " + n.status, text: label(n.status) }));
  const li = el("li", { "data-thread": n.id }, b);
  if (n.children && n.children.length) li.append(el("ul", {}, ...n.children.map(node)));
  return li;
}

function label(status) {
  return (status || "").replaceAll("_", " ");
}

// refreshTreeSoon reloads the tree within a second, at most once a second
// however many events arrive.
function refreshTreeSoon() {
  if (state.treeTimer) return;
  state.treeTimer = setTimeout(() => { state.treeTimer = 0; loadTree(); }, 1000);
}

async function loadDead() {
  try {
    const data = await api("GET", "/dead_letters");
    const list = $("dead");
    list.replaceChildren(...data.dead_letters.slice(-50).reverse().map((d) =>
      el("li", {}, el("strong", { text: d.message.thread_id + ": " }), d.reason + (d.times > 1 ? " (" + d.times + "×)" : ""))));
    if (data.dead_letters.length === 0) list.append(el("li", { class: "sys", text: "none" }));
  } catch (e) { /* shown by the tree */ }
}

function watchAll() {
  if (state.global) state.global.close();
  const es = new EventSource(streamURL("/events?kinds=state,dead_letter,error"));
  es.onopen = () => setConn("live", true);
  // An "error" event from the server has data; a lost connection has none.
  es.onerror = (e) => { if (!e.data) setConn("reconnecting…"); };
  for (const k of ["state", "dead_letter", "error"]) es.addEventListener(k, refreshTreeSoon);
  state.global = es;
}

// ---- one thread ----

function select(id) {
  if (!id) return;
  if (location.hash !== "#" + encodeURIComponent(id)) history.replaceState(null, "", "#" + encodeURIComponent(id));
  state.thread = id;
  state.usage = { input: 0, output: 0, total: 0 };
  state.streaming = null;
  state.calls = new Map();
  $("thread-title").textContent = id;
  $("log").replaceChildren();
  $("views").replaceChildren();
  $("views").hidden = true;
  for (const b of ["stop", "close", "send"]) $(b).disabled = false;
  $("composer-text").disabled = false;
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
      const ev = JSON.parse(m.data);
      render[kind](ev);
    });
  }
  state.stream = es;
}

async function refreshThread() {
  const id = state.thread;
  try {
    const th = await api("GET", "/threads/" + encodeURIComponent(id));
    if (id === state.thread) showState({ status: th.status, until: th.until, pending: th.state && th.state.pending, subscriptions: th.state && th.state.subscriptions });
  } catch (e) {
    if (id === state.thread) showState({ status: "new" });
  }
}

function showState(st) {
  const s = $("thread-status");
  s.className = "status " + st.status;
  s.textContent = label(st.status) + (st.status === "sleeping" && st.until ? " until " + new Date(st.until).toLocaleString() : "");
  const closed = st.status === "closed";
  $("close").disabled = closed;
  $("stop").disabled = closed;
  $("send").disabled = closed;
  $("composer-text").disabled = closed;
  const p = $("pending");
  const parts = [];
  if (st.pending) parts.push(el("div", {}, el("strong", { text: st.status === "sleeping" ? "Sleeping: " : "Waiting for: " }),
    st.pending.name + " " + (st.pending.args || "")));
  for (const sub of st.subscriptions || []) parts.push(el("div", {}, el("strong", { text: "Subscribed: " }), sub.tool + " " + (sub.args || "")));
  p.replaceChildren(...parts);
  p.hidden = parts.length === 0;
}

function renderUsage() {
  const u = state.usage;
  $("usage").textContent = u.total || u.input || u.output ? `tokens: ${u.input} in, ${u.output} out` : "";
}

function add(li) {
  const log = $("log");
  const stick = log.scrollHeight - log.scrollTop - log.clientHeight < 60;
  if (state.streaming && state.streaming.li.isConnected) log.insertBefore(li, state.streaming.li);
  else log.append(li);
  if (stick) log.scrollTop = log.scrollHeight;
  return li;
}

function bubble(cls, who, text, ev) {
  return add(el("li", { class: "msg " + cls, "data-id": ev && ev.id, "data-kind": ev && ev.kind }, el("span", { class: "who", text: who }), text));
}

function sys(text, ev, error) {
  return add(el("li", { class: "sys" + (error ? " error" : ""), "data-id": ev && ev.id, "data-kind": ev && ev.kind, text }));
}

function endStreaming() {
  if (state.streaming) state.streaming.li.remove();
  state.streaming = null;
}

function toolCall(ev, title) {
  const d = el("details", { class: "tool", "data-id": ev.id, "data-kind": ev.kind, "data-call": ev.call_id },
    el("summary", { text: title }), el("pre", { class: "args", text: pretty(ev.args) }));
  state.calls.set(ev.call_id, d);
  return add(el("li", {}, d));
}

function pretty(s) {
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s || ""; }
}

function resultBody(ev) {
  const box = el("div", { class: "result", "data-id": ev.id, "data-kind": ev.kind });
  const display = (ev.display || []).filter((d) => ["text", "diff", "image"].includes(d.type));
  if (display.length) {
    for (const d of display) box.append(segment(d));
  } else if (ev.content && ev.content.length) {
    for (const c of ev.content) box.append(c.type === "image" ? image(c.mediaType, c.data) : el("pre", { text: c.text || "" }));
  } else {
    box.append(el("pre", { text: ev.text || "" }));
  }
  return box;
}

function segment(d) {
  if (d.type === "diff") {
    const pre = el("pre");
    for (const line of (d.patch || "").split("\n")) {
      const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
      pre.append(el("span", { class: cls, text: line + "\n" }));
    }
    return el("div", { class: "diff" }, el("div", { class: "path", text: d.path || "" }), pre);
  }
  if (d.type === "image") return image(d.mediaType, d.data);
  return el("pre", { text: d.text || "" });
}

function image(mediaType, data) {
  if (!/^image\/[a-z0-9.+-]+$/i.test(mediaType || "")) return el("pre", { text: "(an attachment of type " + mediaType + ")" });
  return el("img", { class: "result", alt: "image from the tool", src: "data:" + mediaType + ";base64," + data });
}

function choiceCard(ev) {
  const c = ev.choice;
  const card = el("div", { class: "choice", role: "group", "aria-label": "A choice to make", "data-call": c.call_id }, el("strong", { text: c.prompt }));
  const opts = el("div", { class: "options" });
  c.choices.forEach((text, i) => {
    opts.append(el("button", { type: "button", class: i === c.default ? "primary" : "", onclick: async (e) => {
      for (const b of opts.querySelectorAll("button")) b.disabled = true;
      try {
        await api("POST", "/threads/" + encodeURIComponent(ev.thread_id) + "/choices/" + encodeURIComponent(c.call_id), { selected: i });
        opts.replaceWith(el("div", { class: "sys", text: "You chose: " + text }));
      } catch (err) {
        for (const b of opts.querySelectorAll("button")) b.disabled = false;
        card.append(el("div", { class: "sys error", text: err.message }));
      }
    } }, text));
  });
  card.append(opts);
  return card;
}

// render has one function per event kind of the README's table.
const render = {
  message(ev) { bubble("user", "you", ev.text, ev); },
  delta(ev) {
    let s = state.streaming;
    if (!s || s.completion !== ev.completion_id || !s.li.isConnected) {
      if (s) s.li.remove();
      const li = el("li", { class: "msg assistant streaming", "data-kind": "streaming" }, el("span", { class: "who", text: "agent (typing)" }), "");
      $("log").append(li);
      s = state.streaming = { completion: ev.completion_id, li, text: "" };
    }
    if (ev.index === 0 || !ev.index) s.text = "";
    s.text += ev.text;
    s.li.lastChild.textContent = s.text;
    const log = $("log");
    log.scrollTop = log.scrollHeight;
  },
  turn(ev) {
    endStreaming();
    if (!ev.text && !ev.reasoning) return;
    const li = bubble("assistant", "agent", ev.text, ev);
    if (ev.reasoning) li.prepend(el("details", {}, el("summary", { text: "reasoning" }), el("pre", { text: ev.reasoning })));
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
    if (d) {
      d.append(body);
      d.classList.toggle("error", !!ev.is_error);
      d.querySelector("summary").textContent += ev.is_error ? "  → error" : "  → done";
      if ((ev.display || []).length) d.open = true;
    } else {
      add(el("li", {}, el("details", { class: "tool", open: true }, el("summary", { text: (ev.tool || "tool") + " result" }), body)));
    }
  },
  sleep(ev) { endStreaming(); toolCall(ev, "sleeping: " + ev.tool + " " + short(ev.args)); },
  wake(ev) { render.tool_result(ev); },
  child_spawned(ev) {
    render.tool_result(ev);
    add(el("li", { class: "sys", "data-id": ev.id, "data-kind": ev.kind }, "spawned ",
      el("a", { href: "#" + encodeURIComponent(ev.child), text: ev.child })));
  },
  child_report(ev) { sys("report from " + ev.child + ": " + ev.text, ev); },
  subscription_event(ev) { sys("event" + (ev.tool ? " from " + ev.tool : "") + (ev.child ? " (handed to " + ev.child + ")" : "") + ": " + ev.text, ev); },
  late_result(ev) { sys("late result of " + ev.tool + ": " + ev.text, ev); },
  user_choice(ev) {
    const li = add(el("li", { "data-id": ev.id, "data-kind": ev.kind }));
    li.append(ev.choice ? choiceCard(ev) : el("div", { class: "sys", text: ev.text }));
  },
  choice_answered(ev) { // history says the choice was answered: no buttons for it (after a reload too)
    const opts = document.querySelector(`.choice[data-call="${CSS.escape(ev.call_id)}"] .options`);
    if (opts) opts.replaceWith(el("div", { class: "sys", text: ev.text }));
  },
  oauth(ev) {
    const url = (ev.text.match(/https?:\/\/\S+/) || [""])[0];
    add(el("li", { class: "sys", "data-id": ev.id, "data-kind": ev.kind }, "The tool needs authorization: ",
      url ? el("a", { href: url, target: "_blank", rel: "noopener", text: url }) : ev.text));
  },
  stopped(ev) { endStreaming(); sys(ev.text, ev); },
  closed(ev) { endStreaming(); sys(ev.text, ev); },
  compaction(ev) {
    add(el("li", { class: "sys", "data-id": ev.id, "data-kind": ev.kind }, el("details", {}, el("summary", { text: "earlier history was summarised" }), el("pre", { text: ev.text }))));
  },
  continue(ev) { /* a slice continued in the next one: nothing to show */ },
  marker(ev) { if (ev.text) sys(ev.text, ev); },
  state(ev) {
    if (!ev.state) return;
    if (ev.id.endsWith(".run")) { // a slice started: the rest is unchanged
      const s = $("thread-status");
      s.className = "status running";
      s.textContent = "running";
      return;
    }
    showState(ev.state);
  },
  error(ev) { endStreaming(); sys("error: " + ev.text, ev, true); },
  dead_letter(ev) {
    add(el("li", { class: "dead-card", "data-id": ev.id, "data-kind": ev.kind },
      el("strong", { text: "Dead letter " }), (ev.message ? ev.message.id + ": " : "") + ev.text));
  },
  view(ev) {
    let v;
    try { v = JSON.parse(ev.text); } catch (e) { return; }
    const views = $("views");
    let box = views.querySelector(`[data-view="${CSS.escape(v.view_type)}"]`);
    if (!box) {
      box = el("div", { "data-view": v.view_type });
      views.append(box);
    }
    box.replaceChildren(el("strong", { text: "View " + v.view_type }), el("pre", { text: JSON.stringify(v.content, null, 2) }));
    views.hidden = false;
  },
  reset(ev) {
    $("log").replaceChildren();
    state.calls = new Map();
    state.usage = { input: 0, output: 0, total: 0 };
  },
};

function short(args) {
  const s = (args || "").replace(/\s+/g, " ");
  return s.length > 80 ? s.slice(0, 77) + "…" : s;
}

// ---- actions ----

$("composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const box = $("composer-text");
  const text = box.value.trim();
  if (!text || !state.thread) return;
  $("send").disabled = true;
  try {
    await api("POST", "/threads/" + encodeURIComponent(state.thread) + "/messages", { text });
    box.value = "";
    refreshTreeSoon();
  } catch (err) {
    sys("not sent: " + err.message, null, true);
  } finally {
    $("send").disabled = false;
    box.focus();
  }
});

$("composer-text").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("composer").requestSubmit();
  }
});

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

$("new-thread").addEventListener("submit", (e) => {
  e.preventDefault();
  const id = $("new-thread-id").value.trim();
  if (id) {
    select(id);
    $("new-thread-id").value = "";
    $("composer-text").focus();
  }
});

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

function start() {
  loadTree();
  watchAll();
  const id = decodeURIComponent(location.hash.slice(1));
  if (id) select(id);
}

start();
