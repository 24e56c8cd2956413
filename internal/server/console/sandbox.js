// A coding thread's sandbox (docs/sandbox.md): its diff per file
// (collapsible), its children's sandboxes, and Apply / Discard, from
// GET /threads/{id}/sandbox, .../sandbox/diff and POST .../apply and
// .../discard. Loaded before console.js; uses render.js's el and diffBox
// and console.js's api, state and select (called at run time).
"use strict";

// sandboxArmed is the thread whose Discard was clicked once (a re-render
// keeps it armed).
let sandboxArmed = "";
// sandboxNote is the outcome of the latest Apply or Discard, shown until
// another thread's is: {thread, text, cls}.
let sandboxNote = null;
// sandboxGen numbers the loads: only the latest one renders.
let sandboxGen = 0;

function noteFor(id) {
  const n = sandboxNote && sandboxNote.thread === id ? sandboxNote : null;
  return el("p", { class: "sandbox-result" + (n ? " " + n.cls : ""), role: "status", text: n ? n.text : "" });
}

async function sandboxFetch(path) {
  const headers = {};
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  const resp = await fetch(path, { headers });
  if (!resp.ok) throw new Error(resp.statusText);
  return resp.text();
}

// loadSandbox shows the sandbox of the selected thread th (GET
// /threads/{id}'s answer), or hides the panel when it has none.
async function loadSandbox(th) {
  const id = state.thread;
  const gen = ++sandboxGen;
  const box = $("sandbox");
  const base = "/threads/" + encodeURIComponent(id) + "/sandbox";
  let sb, diff;
  try {
    sb = await api("GET", base);
    diff = await sandboxFetch(base + "/diff");
  } catch (e) { // no sandbox (404), or none on this server
    if (id !== state.thread || gen !== sandboxGen) return;
    box.dataset.key = "";
    if (sandboxNote && sandboxNote.thread === id) { // just discarded: say so
      box.replaceChildren(el("div", { class: "sandbox-head" }, el("h3", { text: "Sandbox" })), noteFor(id));
      box.hidden = false;
    } else {
      box.hidden = true;
    }
    return;
  }
  const children = [];
  for (const c of (th && th.state && th.state.children) || []) {
    try {
      children.push(await api("GET", "/threads/" + encodeURIComponent(c) + "/sandbox"));
    } catch (e) { /* a child without a sandbox */ }
  }
  if (id !== state.thread || gen !== sandboxGen) return;
  // The same sandbox as shown: keep what is on screen (a half-armed
  // Discard, collapsed files, a result).
  const key = JSON.stringify([id, sb, diff, children]);
  if (!box.hidden && box.dataset.key === key) return;
  box.dataset.key = key;
  const files = diff.split(/(?=^diff --git )/m).filter((p) => p.trim());
  const result = noteFor(id);
  // note records an outcome and loads the sandbox again, so the panel
  // shows it whatever loads ran meanwhile.
  const note = (text, cls) => {
    sandboxNote = { thread: id, text, cls };
    result.textContent = text;
    result.className = "sandbox-result " + cls;
    box.dataset.key = "";
    loadSandbox(th);
  };
  const apply = el("button", { type: "button", class: "sandbox-apply", text: "Apply" });
  const discard = el("button", { type: "button", class: "sandbox-discard", text: "Discard" });
  apply.disabled = sb.files.length === 0;
  apply.addEventListener("click", async () => {
    apply.disabled = discard.disabled = true;
    try {
      const r = await api("POST", base + "/apply", {});
      note("Applied as " + r.commit.slice(0, 12) + ": " + r.files.join(", "), "ok");
    } catch (e) {
      note("Not applied: " + e.message, "error");
      apply.disabled = discard.disabled = false;
    }
  });
  // Discarding loses the changes: the first click asks, the second does.
  if (sandboxArmed === id) discard.textContent = "Discard: sure?";
  discard.addEventListener("click", async () => {
    if (sandboxArmed !== id) {
      sandboxArmed = id;
      discard.textContent = "Discard: sure?";
      return;
    }
    sandboxArmed = "";
    apply.disabled = discard.disabled = true;
    try {
      const r = await api("POST", base + "/discard", {});
      note("Discarded " + r.discarded + "; its changes are gone.", "ok");
    } catch (e) {
      note("Not discarded: " + e.message, "error");
      discard.disabled = false;
    }
  });
  const head = el("div", { class: "sandbox-head" },
    el("h3", { text: "Sandbox" }),
    el("span", { class: "sandbox-branch", text: sb.branch + (sb.repo ? " (" + sb.repo + ")" : "") }),
    el("span", { class: "sandbox-count", text: sb.files.length + (sb.files.length === 1 ? " file changed" : " files changed") }),
    el("span", { class: "spacer" }), apply, discard);
  const list = el("div", { class: "sandbox-files" });
  for (const p of files) {
    const m = p.match(/^diff --git a\/(\S+)/) || p.match(/^\+\+\+ b\/(\S+)/m);
    const path = m ? m[1] : "";
    const d = el("details", { class: "sandbox-file", open: true, "data-path": path },
      el("summary", { text: path }), diffBox("", p));
    list.append(d);
  }
  const kids = el("ul", { class: "sandbox-children" });
  for (const c of children) {
    const b = el("button", { type: "button", class: "link", text: c.thread });
    b.addEventListener("click", () => select(c.thread));
    kids.append(el("li", { "data-thread": c.thread }, b, " " + c.branch + ": " +
      (c.files.length ? c.files.join(", ") : "no changes")));
  }
  box.replaceChildren(head, result, list,
    children.length ? el("h4", { text: "Children's sandboxes (stacked on this one; squash_child brings them in)" }) : null,
    children.length ? kids : null);
  box.hidden = false;
}
