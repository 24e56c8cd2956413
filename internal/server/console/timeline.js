// Where the time went (docs/timeline.md): a thread's timeline as a bar
// and the overview per agent, from GET /threads/{id}/timeline and
// GET /stats. Loaded before console.js; uses render.js's el and duration.
"use strict";

const CAUSES = {
  generating: "generating", in_slice: "in slice", queued: "queued", waiting_tool: "waiting on tools",
  waiting_person: "waiting on a person", sleeping: "sleeping", waiting_children: "waiting on children",
};

function pct(f) { return (100 * f).toFixed(f > 0 && f < 0.1 ? 1 : 0) + "%"; }

// timelineBar is a bar of segments, one per [cause, ms, tool], each as
// wide as its share.
function timelineBar(parts, label) {
  const bar = el("div", { class: "tl-bar", role: "img", "aria-label": label });
  for (const [cause, ms, tool] of parts) {
    if (ms <= 0) continue;
    const seg = el("span", { class: "tl-seg c-" + cause, "data-cause": cause,
      title: (CAUSES[cause] || cause) + (tool ? " (" + tool + ")" : "") + ": " + duration(ms) });
    seg.style.flexGrow = String(ms); // through the CSSOM: the CSP allows no style attribute
    bar.append(seg);
  }
  return bar;
}

function totalsParts(totals) {
  return Object.keys(CAUSES).map((c) => [c, Math.round(1000 * (totals[c] || 0))]);
}

function activeSeconds(totals) {
  return Object.keys(CAUSES).reduce((a, c) => a + (totals[c] || 0), 0);
}

function legend(totals) {
  const ul = el("ul", { class: "tl-legend" });
  for (const c of Object.keys(CAUSES)) {
    if (!totals[c]) continue;
    ul.append(el("li", {}, el("span", { class: "tl-swatch c-" + c }), CAUSES[c] + " " + duration(Math.round(1000 * totals[c]))));
  }
  return ul;
}

// renderTimeline shows a thread's timeline: the bar of its active
// intervals in order (idle time left out), the wait fraction, a legend.
function renderTimeline(box, tl) {
  const parts = tl.intervals.filter((iv) => iv.cause !== "idle")
    .map((iv) => [iv.cause, new Date(iv.end) - new Date(iv.start), iv.tool]);
  const active = activeSeconds(tl.totals);
  if (active <= 0) { box.hidden = true; return; }
  const head = el("div", { class: "tl-head" }, el("strong", { text: "Where the time went" }),
    el("span", { class: "tl-wf", text: "wait fraction " + pct(tl.wait_fraction) + " of " + duration(Math.round(1000 * active)) }),
    el("span", { class: "tl-q", text: tl.queue_delay.count ? "queue delay p50 " + duration(Math.round(1000 * tl.queue_delay.p50_seconds)) : "" }));
  box.replaceChildren(head, timelineBar(parts, "timeline: wait fraction " + pct(tl.wait_fraction)), legend(tl.totals));
  box.hidden = false;
}

// renderAgents shows the overview per agent: each agent's wait fraction
// and the bar of its totals.
function renderAgents(list, stats) {
  const items = stats.groups.filter((g) => activeSeconds(g.totals) > 0).map((g) =>
    el("li", { "data-agent": g.key },
      el("div", { class: "tl-agent" }, el("span", { class: "id", text: g.key }),
        el("span", { class: "tl-wf", text: pct(g.wait_fraction) + " waiting", title: g.threads + " threads, " +
          duration(Math.round(1000 * activeSeconds(g.totals))) + " active" })),
      timelineBar(totalsParts(g.totals), g.key + ": wait fraction " + pct(g.wait_fraction))));
  list.replaceChildren(...items);
  list.previousElementSibling.hidden = list.hidden = items.length === 0;
}
