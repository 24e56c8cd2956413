// wait_for_url: a RAP tool server in TypeScript/JavaScript (@agentslice/rap).
//
// The tool polls a URL until it answers HTTP 200, then reports. It answers the
// call at once ("watching ...", a subscription), sends a progress event into
// the thread after each failed poll, and a final event when the URL is up or
// the time is spent. The runtime can cancel it at any time. The same tool is
// in examples/go and examples/python.
//
//   node examples/typescript/wait_for_url.mjs 9100     (prints "LISTENING <port>")
//   bin/agentslice serve -tool-server http://127.0.0.1:9100
//
// In a project of your own: npm install @agentslice/rap, and import from it.
import { RapServer } from "../../sdk/typescript/src/index.js";

const server = new RapServer({ name: "waiter", description: "Waits for things to be ready" });

// poll GETs url once: "200" or what went wrong.
async function poll(url, signal) {
  try {
    const resp = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(5000)]) });
    await resp.body?.cancel();
    return resp.status === 200 ? "200" : `HTTP ${resp.status}`;
  } catch (err) {
    if (signal.aborted) throw err;
    return `unreachable (${err.cause?.code ?? err.message})`;
  }
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
});

server.tool("wait_for_url", {
  description: "Waits until a URL answers HTTP 200 and reports then, with progress on the way.",
  inputSchema: {
    type: "object",
    properties: {
      url: { type: "string", pattern: "^https?://", description: "the URL to poll" },
      timeout_seconds: { type: "number", exclusiveMinimum: 0, default: 60 },
      interval_seconds: { type: "number", exclusiveMinimum: 0, default: 2 },
    },
    required: ["url"],
    additionalProperties: false,
  },
  annotations: { readOnly: true, longRunning: true },
}, async ({ url, timeout_seconds = 60, interval_seconds = 2 }, call) => {
  await call.subscribe(`watching ${url}; progress follows`);
  const deadline = Date.now() + timeout_seconds * 1000;
  for (let attempt = 1; ; attempt++) {
    const got = await poll(url, call.signal);
    if (got === "200") {
      return call.event(`${url} returned 200 after ${attempt} attempts`, { associative: true, final: true });
    }
    if (Date.now() + interval_seconds * 1000 > deadline) {
      return call.event(`gave up on ${url} after ${attempt} attempts (last: ${got})`, { associative: true, final: true });
    }
    await call.event(`attempt ${attempt}: ${got}; trying again in ${interval_seconds}s`, { associative: true });
    await sleep(interval_seconds * 1000, call.signal);
    if (call.signal.aborted) return; // cancelled: the runtime no longer wants the answer
  }
});

const { port } = await server.listen(Number(process.argv[2] ?? 9100));
console.log(`LISTENING ${port}`);
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => server.close().then(() => process.exit(0)));
