// A real HTTP callback receiver for the tests: it records every body POSTed
// to it and answers with the statuses a test queues (200 otherwise), so the
// tests see exactly what the server sends and how it retries.
import http from "node:http";
import { once } from "node:events";

export async function receiver() {
  const bodies = [];
  const statuses = [];
  const waiters = [];
  const srv = http.createServer(async (req, res) => {
    let b = "";
    for await (const c of req) b += c;
    const status = statuses.shift() ?? 200;
    const body = { path: req.url, status, contentType: req.headers["content-type"], json: JSON.parse(b) };
    bodies.push(body);
    for (const w of waiters.splice(0)) w();
    res.writeHead(status, { "content-type": "application/json" });
    res.end(status === 200 ? "{}" : JSON.stringify({ error: `status ${status}` }));
  });
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const url = `http://127.0.0.1:${srv.address().port}/cb`;
  return {
    url,
    bodies,
    /** answer queues statuses for the next POSTs. */
    answer: (...s) => statuses.push(...s),
    /** waitFor resolves once a recorded body matches (or rejects after 5s). */
    async waitFor(match, what = "a callback") {
      const deadline = Date.now() + 5000;
      for (;;) {
        const hit = bodies.find(match);
        if (hit) return hit;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(bodies.map((b) => b.json))}`);
        await new Promise((r) => { waiters.push(r); setTimeout(r, 100).unref(); });
      }
    },
    close: () => { srv.closeAllConnections(); return new Promise((r) => srv.close(r)); },
  };
}

/** deferred returns a promise with its resolve function. */
export function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

let seq = 0;
/** invocation returns a valid invocation body for operation. */
export function invocation(cbURL, operation, args = {}, extra = {}) {
  seq++;
  return { operation, arguments: args, id: `call_${seq}`, call_id: `model_${seq}`, callback_url: cbURL, group_id: `thr_${seq}`, ...extra };
}

export async function post(base, path, body) {
  const resp = await fetch(base + path, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: resp.status, json: await resp.json() };
}
