// The serve client against a local HTTP server that answers as serve's API
// does (docs/serve.md): the requests the client sends are checked exactly,
// and the event stream is split at awkward places. The client against the
// real serve is server TestServeTypeScriptSDK (Go).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { once } from "node:events";
import { ServeClient, ServeError } from "../src/index.js";

const seen = [];
const srv = http.createServer(async (req, res) => {
  let body = "";
  for await (const c of req) body += c;
  seen.push({ method: req.method, url: req.url, type: req.headers["content-type"], body: body ? JSON.parse(body) : undefined });
  if (req.url.startsWith("/threads/a%2Fb/events")) {
    res.writeHead(200, { "content-type": "text/event-stream" });
    // Chunks split inside lines and events, CRLF line ends, a comment, a
    // two-line data field and an event without an id.
    const stream = ": subscribed to thread a/b\n\nevent: message\r\nid: 1\r\ndata: {\"kind\":\"message\",\"text\":\"hi\"}\r\n\r\nevent: tool_re" +
      "sult\nid: 4\ndata: {\"kind\":\"tool_result\",\ndata: \"text\":\"ok\"}\n\nevent: reply\ndata: {\"kind\":\"reply\",\"text\":\"done\"}\n\n";
    for (const part of [stream.slice(0, 40), stream.slice(40, 130), stream.slice(130)]) {
      res.write(part);
      await new Promise((r) => setImmediate(r));
    }
    return; // left open, as serve's stream is: the client ends it
  }
  if (req.url === "/threads/closed/messages") {
    res.writeHead(409, { "content-type": "application/json" });
    return res.end(JSON.stringify({ error: "thread is closed", field: "text" }));
  }
  res.writeHead(req.method === "POST" ? 202 : 200, { "content-type": "application/json" });
  res.end(JSON.stringify(req.url.endsWith("/messages") ? { id: body && JSON.parse(body).id || "m1", thread_id: "t" } : { id: "t", status: "idle", items: [] }));
});
srv.listen(0, "127.0.0.1");
await once(srv, "listening");
const base = `http://127.0.0.1:${srv.address().port}`;
after(() => { srv.closeAllConnections(); srv.close(); });

test("send, thread, answerChoice and stop send serve's requests", async () => {
  const c = new ServeClient(base + "/");
  assert.deepEqual(await c.send("t 1", "hello", { id: "m_1", agent: "ops", userId: "u" }), { id: "m_1", thread_id: "t" });
  assert.equal((await c.thread("t 1")).status, "idle");
  await c.answerChoice("t 1", "call_9", 2);
  await c.stop("t 1", "enough");
  assert.deepEqual(seen.splice(0), [
    { method: "POST", url: "/threads/t%201/messages", type: "application/json", body: { text: "hello", id: "m_1", agent: "ops", user_id: "u" } },
    { method: "GET", url: "/threads/t%201", type: undefined, body: undefined },
    { method: "POST", url: "/threads/t%201/choices/call_9", type: "application/json", body: { selected: 2 } },
    { method: "POST", url: "/threads/t%201/stop", type: "application/json", body: { reason: "enough" } },
  ]);
});

test("a refusal is a ServeError with the status and the field", async () => {
  const c = new ServeClient(base);
  await assert.rejects(c.send("closed", "x"), (err) => err instanceof ServeError && err.status === 409 && err.field === "text" && /thread is closed/.test(err.message));
  assert.throws(() => new ServeClient("localhost:8080"), /baseUrl must be an http\(s\) URL/);
});

test("events parses serve's stream: kinds, cursors, multi-line data", async () => {
  const c = new ServeClient(base);
  const stop = new AbortController();
  const events = await c.events("a/b", { after: 0, kinds: ["message", "tool_result", "reply"], signal: stop.signal });
  const got = [];
  for await (const ev of events) {
    got.push(ev);
    if (ev.kind === "reply") break;
  }
  stop.abort();
  assert.deepEqual(got, [
    { kind: "message", seq: 1, data: { kind: "message", text: "hi" } },
    { kind: "tool_result", seq: 4, data: { kind: "tool_result", text: "ok" } },
    { kind: "reply", seq: undefined, data: { kind: "reply", text: "done" } },
  ]);
  assert.equal(seen.at(-1).url, "/threads/a%2Fb/events?after=0&kinds=message%2Ctool_result%2Creply");
});
