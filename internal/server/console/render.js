// How the console shows a thread's events: one function per event kind of
// the README's table (render), tool results by their outcome, views by
// their type, markdown through the server (POST /markdown: goldmark and a
// sanitizer; the console never parses markdown itself). Loaded before
// console.js, which owns the state, the API and the page.
"use strict";

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

// ---- time ----

// eventTime is when an event happened, when the server says so (history
// items carry the commit's time; calls their dispatch, results their
// arrival). Servers that do not send it leave it unknown.
function eventTime(ev) {
  const v = ev && (ev.time || ev.at);
  if (!v) return null;
  const d = new Date(v);
  return isNaN(d) ? null : d;
}

function duration(ms) {
  if (ms < 0) return "";
  if (ms < 1000) return ms + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + " s";
  const m = Math.floor(ms / 60000), s = Math.round((ms % 60000) / 1000);
  if (m < 60) return m + " min" + (s ? " " + s + " s" : "");
  const h = Math.floor(m / 60);
  return h + " h" + (m % 60 ? " " + (m % 60) + " min" : "");
}

// stamp puts an event's time (and how long it took since start, when
// known) on node: in full on hover, short in its .who line if it has one.
function stamp(node, ev, start) {
  const t = eventTime(ev);
  if (!t || !node) return;
  let tip = t.toLocaleString();
  if (start) tip += " · took " + duration(t - start);
  node.title = tip;
  node.dataset.time = t.toISOString();
  const who = node.querySelector(":scope > .who");
  if (who) who.append(el("time", { datetime: t.toISOString(), text: " · " + t.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) }));
}

// ---- markdown ----

const md = { queue: [], timer: 0, cache: new Map() };

// markdownInto shows text in node at once as plain text (line breaks
// kept), then swaps in the server's sanitized HTML when it arrives.
function markdownInto(node, text) {
  node.classList.add("md");
  node.textContent = text;
  if (!text) return;
  if (md.cache.has(text)) {
    node.innerHTML = md.cache.get(text); // sanitized by the server
    node.classList.add("rendered");
    return;
  }
  md.queue.push({ node, text });
  if (!md.timer) md.timer = setTimeout(flushMarkdown, 0);
}

async function flushMarkdown() {
  md.timer = 0;
  let batch = [];
  let size = 0;
  const send = async (b) => {
    try {
      const data = await api("POST", "/markdown", { texts: b.map((x) => x.text) });
      b.forEach((x, i) => {
        const html = data.html[i];
        if (md.cache.size > 500) md.cache.delete(md.cache.keys().next().value);
        md.cache.set(x.text, html);
        if (x.node.textContent === x.text) { // not replaced meanwhile
          x.node.innerHTML = html; // sanitized by the server (goldmark + bluemonday)
          x.node.classList.add("rendered");
        }
      });
    } catch (e) { /* the plain text stays */ }
  };
  for (const item of md.queue.splice(0)) {
    if (item.text.length > 400000) continue; // past the body limit: stays plain
    if (batch.length >= 256 || size + item.text.length > 600000) {
      send(batch);
      batch = [];
      size = 0;
    }
    batch.push(item);
    size += item.text.length;
  }
  if (batch.length) send(batch);
}

// ---- tool results ----

// resultText is a result's text: its text, else its first text content.
function resultText(ev) {
  if (ev.text) return ev.text;
  for (const c of ev.content || []) if (c.type === "text" && c.text) return c.text;
  return "";
}

// outcome says how a tool call ended. Errors come as is_error (the
// runtime's own results: unknown tools, deadlines, interruptions) or, from
// tools over RAP, which has no error flag, as a text starting "error:"
// (the kit's tools, the MCP proxy). An interruption is no failure of the
// tool, and a sleep cut short by a message is a sleep woken early.
function outcome(ev) {
  const text = resultText(ev).trimStart();
  const interrupted = ev.is_error && /^interrupted:/.test(text);
  if (ev.kind === "wake") {
    if (interrupted) return { state: "woken", label: "woken early" };
    return ev.is_error ? { state: "failed", label: "failed" } : { state: "ok", label: "woke up" };
  }
  if (interrupted) return { state: "interrupted", label: "interrupted" };
  if (ev.is_error || /^error:/i.test(text)) return { state: "failed", label: "failed" };
  return { state: "ok", label: "done" };
}

function resultBody(ev) {
  const box = el("div", { class: "result", "data-id": ev.id, "data-kind": ev.kind });
  const display = (ev.display || []).filter((d) => ["text", "diff", "image"].includes(d.type));
  if (display.length) {
    for (const d of display) box.append(segment(d));
  } else if (ev.content && ev.content.length) {
    for (const c of ev.content) box.append(c.type === "image" ? image(c.mediaType, c.data) : el("pre", { class: "out", text: c.text || "" }));
  } else {
    box.append(el("pre", { class: "out", text: ev.text || "" }));
  }
  return box;
}

function segment(d) {
  if (d.type === "diff") return diffBox(d.path, d.patch);
  if (d.type === "image") return image(d.mediaType, d.data);
  return el("pre", { class: "out", text: d.text || "" });
}

function diffBox(path, patch) {
  const pre = el("pre");
  for (const line of (patch || "").split("\n")) {
    const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
    pre.append(el("span", { class: cls, text: line + "\n" }));
  }
  return el("div", { class: "diff" }, path ? el("div", { class: "path", text: path }) : null, pre);
}

function image(mediaType, data) {
  if (!/^image\/[a-z0-9.+-]+$/i.test(mediaType || "")) return el("pre", { text: "(an attachment of type " + mediaType + ")" });
  return el("img", { class: "result", alt: "image from the tool", src: "data:" + mediaType + ";base64," + data });
}

function pretty(s) {
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch (e) { return s || ""; }
}

function short(args) {
  const s = (args || "").replace(/\s+/g, " ");
  return s.length > 80 ? s.slice(0, 77) + "…" : s;
}

// ---- views ----

// viewBody renders a view_update's content by its view type: "diff" (the
// RAP spec's: {patch}), "markdown"/"text" ({text} or {markdown}),
// "progress" ({value|percent, max?, label?}); anything else as a readable
// outline of its fields.
function viewBody(type, content) {
  const c = content && typeof content === "object" ? content : { value: content };
  if (type === "diff" && typeof c.patch === "string") {
    const files = c.patch.split(/(?=^diff --git )/m).filter((p) => p.trim());
    return el("div", {}, ...files.map((p) => {
      const m = p.match(/^diff --git a\/(\S+)/) || p.match(/^\+\+\+ b\/(\S+)/m);
      return diffBox(m ? m[1] : c.path || "", p);
    }));
  }
  if ((type === "markdown" || type === "text") && typeof (c.markdown ?? c.text) === "string") {
    const box = el("div");
    markdownInto(box, c.markdown ?? c.text);
    return box;
  }
  const pct = c.percent ?? c.pct ?? (typeof c.value === "number" && c.max ? (100 * c.value) / c.max : undefined);
  if (type === "progress" && typeof pct === "number") {
    return el("div", { class: "progress" }, el("progress", { max: "100", value: String(pct) }),
      el("span", { text: " " + Math.round(pct) + "%" + (c.label ? " " + c.label : "") }));
  }
  return outline(content);
}

// outline shows any JSON value readably: fields as a list of names and
// values, lists of scalars as lists, lists of like objects as a table.
function outline(v, depth = 0) {
  if (v === null || v === undefined) return el("span", { class: "muted", text: "—" });
  if (typeof v !== "object") {
    const s = String(v);
    return s.includes("\n") ? el("pre", { class: "out", text: s }) : el("span", { text: s });
  }
  if (depth > 6) return el("pre", { class: "out", text: JSON.stringify(v, null, 2) });
  if (Array.isArray(v)) {
    if (v.length === 0) return el("span", { class: "muted", text: "none" });
    const objs = v.every((x) => x && typeof x === "object" && !Array.isArray(x));
    if (objs) {
      const cols = [...new Set(v.flatMap((x) => Object.keys(x)))];
      if (cols.length <= 8) {
        return el("table", { class: "outline" }, el("thead", {}, el("tr", {}, ...cols.map((k) => el("th", { text: k })))),
          el("tbody", {}, ...v.map((x) => el("tr", {}, ...cols.map((k) => el("td", {}, outline(x[k], depth + 1)))))));
      }
    }
    return el("ul", { class: "outline" }, ...v.map((x) => el("li", {}, outline(x, depth + 1))));
  }
  const keys = Object.keys(v);
  if (keys.length === 0) return el("span", { class: "muted", text: "empty" });
  return el("dl", { class: "outline" }, ...keys.flatMap((k) => [el("dt", { text: k }), el("dd", {}, outline(v[k], depth + 1))]));
}

function emptyView(content) {
  return content === null || content === undefined || (typeof content === "object" && Object.keys(content).length === 0);
}

// ---- choices ----

// choiceFromText reads a user_choice marker's text (the receiver's
// "The tool asks you to choose: …") when the choice is no longer
// pending: its prompt, options and call.
function choiceFromText(text) {
  const m = (text || "").match(/^The tool asks you to choose: ([^\n]*)\n([\s\S]*?)\n?\(choice for tool call (\S+)\)\s*$/);
  if (!m) return null;
  const choices = [];
  let def;
  for (const line of m[2].split("\n")) {
    const o = line.match(/^\s*(\d+)\. (.*?)( \(default\))?$/);
    if (!o) continue;
    if (o[3]) def = choices.length;
    choices.push(o[2]);
  }
  return choices.length ? { prompt: m[1], choices, default: def, call_id: m[3] } : null;
}

function choiceKey(thread, call) {
  return "agentslice-choice:" + thread + ":" + call;
}

// answeredChoice is the answer of a choice no longer pending: from the
// server when it says (answer / selected), else what this browser sent.
function answeredChoice(ev, c) {
  if (typeof ev.answer === "string") return ev.answer;
  if (typeof ev.selected === "number" && c && c.choices[ev.selected] !== undefined) return c.choices[ev.selected];
  try { return localStorage.getItem(choiceKey(ev.thread_id, c ? c.call_id : ev.call_id)); } catch (e) { return null; }
}
