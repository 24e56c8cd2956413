// A RAP tool server with two tools that do something real and slow:
//   wait_for_url  polls a URL until it answers 200, then reports (one result;
//                 the progress goes to the thread's "wait_for_url" view);
//   watch_url     a subscription: an inline event each time the URL's status
//                 changes, the final one when it answers 200.
// Run: node examples/wait-for-url.js [port]   (prints "LISTENING <port>")
// Then: agentslice serve -tool-server http://127.0.0.1:<port>
import { RapServer, display } from "@agentslice/rap";

const schema = {
  type: "object",
  properties: {
    url: { type: "string", pattern: "^https?://", description: "the URL to poll" },
    interval_ms: { type: "integer", minimum: 10, maximum: 60000, default: 1000 },
    max_attempts: { type: "integer", minimum: 1, maximum: 10000, default: 120 },
  },
  required: ["url"],
  additionalProperties: false,
};

// status GETs url once: its HTTP status, or the transport error's message.
async function status(url, signal) {
  try {
    const resp = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(10000)]) });
    await resp.body?.cancel();
    return resp.status;
  } catch (err) {
    if (signal.aborted) throw err;
    return err.cause?.code ?? err.message;
  }
}

const sleep = (ms, signal) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener("abort", () => { clearTimeout(t); reject(signal.reason); }, { once: true });
});

const server = new RapServer({ name: "urlwatch", description: "Wait for web pages to come up." });

server.tool("wait_for_url", {
  description: "Wait until a URL answers HTTP 200, then report how long it took.",
  inputSchema: schema,
  annotations: { readOnly: true, longRunning: true },
}, async ({ url, interval_ms = 1000, max_attempts = 120 }, call) => {
  const start = Date.now();
  let last;
  for (let attempt = 1; attempt <= max_attempts; attempt++) {
    const got = await status(url, call.signal);
    if (got !== last) await call.view("wait_for_url", { url, attempt, status: got }); // progress, for UIs
    last = got;
    if (got === 200) {
      const text = `${url} answered 200 after ${attempt} attempt(s), ${Date.now() - start} ms.`;
      return { text, displayAs: [display.text(`✅ ${url} is up`)] };
    }
    if (attempt < max_attempts) await sleep(interval_ms, call.signal);
  }
  throw new Error(`${url} did not answer 200 in ${max_attempts} attempts`);
});

server.tool("watch_url", {
  description: "Watch a URL: an event each time its status changes, the last when it answers 200.",
  inputSchema: schema,
  annotations: { readOnly: true },
}, async ({ url, interval_ms = 1000, max_attempts = 120 }, call) => {
  await call.subscribe(`Watching ${url}; I will report each status change.`);
  let last;
  for (let attempt = 1; attempt <= max_attempts; attempt++) {
    const got = await status(url, call.signal);
    if (got === 200) return call.event(`${url} answered 200 (attempt ${attempt}).`, { associative: true, final: true });
    if (got !== last) await call.event(`${url} now answers ${got}.`, { associative: true });
    last = got;
    await sleep(interval_ms, call.signal);
  }
  await call.event(`${url} did not answer 200 in ${max_attempts} attempts; stopped watching.`, { associative: true, final: true });
});

const { port } = await server.listen(Number(process.argv[2] ?? 0));
console.log(`LISTENING ${port}`);
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => server.close().then(() => process.exit(0)));
