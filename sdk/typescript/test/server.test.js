import { test, after } from "node:test";
import assert from "node:assert/strict";
import { RapServer, defineTool, display, StatusError, UnavailableError, postJSON } from "../src/index.js";
import { receiver, deferred, invocation, post } from "./lib/helpers.js";

const fast = { attempts: 4, baseMs: 1, maxMs: 5, totalMs: 5000, attemptTimeoutMs: 2000 };
const quiet = { warn() {}, error() {} };
const cb = await receiver();
after(() => cb.close());

// gate returns a deferred that is resolved when the test ends, however it
// ends: a failed assertion never leaves a handler (and close) waiting.
function gate_(t) {
  const d = deferred();
  t.after(() => d.resolve());
  return d;
}

async function start(tools, opts = {}) {
  const srv = new RapServer({ name: "t", description: "test tools", retry: fast, logger: quiet, tools, ...opts });
  const { url } = await srv.listen(0);
  after(() => srv.close());
  return { srv, url };
}

// idle resolves once the server has finished every call it runs.
const idle = (srv) => Promise.all([...srv.running.values()].map((rc) => rc.promise));

const resultOf = (inv) => cb.waitFor((b) => b.json.type === "tool_result" && b.json.id === inv.id && b.status === 200, `the result of ${inv.operation}`);

test("toolset document: endpoint from the request, schemas and annotations", async () => {
  const { url } = await start([
    defineTool("echo", { description: "Echo.", inputSchema: { type: "object", properties: { s: { type: "string" } } }, annotations: { readOnly: true, requiresAuth: "github", "x-team": "infra" } }, ({ s }) => s),
    defineTool("plain", () => "ok"),
  ]);
  const resp = await fetch(url + "/.well-known/rap-toolset");
  assert.equal(resp.status, 200);
  const doc = await resp.json();
  assert.deepEqual(doc, {
    name: "t", description: "test tools", endpoint: url + "/invoke",
    tools: [
      { name: "echo", description: "Echo.", inputSchema: { type: "object", properties: { s: { type: "string" } } }, annotations: { readOnly: true, requiresAuth: "github", "x-team": "infra" } },
      { name: "plain", description: "", inputSchema: { type: "object" } },
    ],
  });
  const pub = await start([defineTool("x", () => "x")], { publicUrl: "https://tools.example/base/" });
  assert.equal((await (await fetch(pub.url + "/.well-known/rap-toolset")).json()).endpoint, "https://tools.example/base/invoke");
  const fwd = await fetch(url + "/mounted/.well-known/rap-toolset", { headers: { "x-forwarded-proto": "https" } });
  assert.equal((await fwd.json()).endpoint, url.replace("http:", "https:") + "/mounted/invoke");
});

test("bad tool definitions are refused naming what is wrong", () => {
  assert.throws(() => defineTool("has space", () => ""), /must be 1..128 characters of \[A-Za-z0-9_-\]/);
  assert.throws(() => defineTool("x", { inputSchema: [] }, () => ""), /inputSchema must be a JSON Schema object/);
  assert.throws(() => defineTool("x", { annotations: { requiresAuth: true } }, () => ""), /requiresAuth must be a string/);
  assert.throws(() => new RapServer({ name: "" }), /name must be 1..128/);
  assert.throws(() => new RapServer({ name: "s", tools: [defineTool("x", { inputSchema: { type: "nope" } }, () => "")] }), /inputSchema does not compile/);
  const srv = new RapServer({ name: "s" }).tool("x", () => "");
  assert.throws(() => srv.tool("x", () => ""), /defined twice/);
  assert.throws(() => new RapServer({ name: "s", retry: { attempts: -1 } }), /retry.attempts must be a positive number/);
});

test("invocation is acknowledged before the handler works; the result echoes call_id and carries display_as", async (t) => {
  const gate = gate_(t);
  const started = deferred();
  const { url } = await start([defineTool("slow", async (args, call) => {
    started.resolve(call);
    await gate.promise;
    return { text: `done ${args.n}`, displayAs: [display.diff("a.txt", "@@ -1 +1 @@\n-a\n+b"), display.text("done")] };
  })]);
  const inv = invocation(cb.url, "slow", { n: 1 }, { thread_ancestors: ["root"], user_id: "u1" });
  const ack = await post(url, "/invoke", inv);
  assert.deepEqual(ack, { status: 200, json: { status: "accepted" } });
  const call = await started.promise;
  assert.equal(call.userId, "u1");
  assert.deepEqual(call.threadAncestors, ["root"]);
  assert.equal(cb.bodies.filter((b) => b.json.id === inv.id).length, 0, "a result before the handler finished");
  gate.resolve();
  const r = await resultOf(inv);
  assert.equal(r.contentType, "application/json");
  assert.deepEqual(r.json, {
    type: "tool_result", group_id: inv.group_id, id: inv.id, call_id: inv.call_id, text: "done 1",
    display_as: [{ type: "diff", content: { path: "a.txt", patch: "@@ -1 +1 @@\n-a\n+b" } }, { type: "text", content: "done" }],
  });
});

test("content results, oauth, user_choice and view_update bodies", async () => {
  const { url } = await start([defineTool("all", async (_, call) => {
    await call.oauth("https://auth.example/start");
    await call.choice("Proceed?", ["no", "yes"], 0, "https://tool.example/choice");
    await call.view("progress", { done: 1 });
    assert.throws(() => call.choice("?", [], 0, "https://x"), /at least one choice/);
    assert.throws(() => call.choice("?", ["a"], 1, "https://x"), /not an index/);
    return { content: [{ type: "text", text: "hi" }, { type: "image", data: "aGk=", mediaType: "image/png" }] };
  })]);
  const inv = invocation(cb.url, "all", {}, { call_id: null });
  await post(url, "/invoke", inv);
  const r = await resultOf(inv);
  assert.deepEqual(r.json.content, [{ type: "text", text: "hi" }, { type: "image", data: "aGk=", mediaType: "image/png" }]);
  assert.equal(r.json.call_id, null);
  const mine = cb.bodies.filter((b) => b.json.group_id === inv.group_id).map((b) => b.json);
  assert.deepEqual(mine.slice(0, 3), [
    { type: "oauth", group_id: inv.group_id, id: inv.id, call_id: null, auth_url: "https://auth.example/start" },
    { type: "user_choice", group_id: inv.group_id, id: inv.id, call_id: null, prompt: "Proceed?", choices: ["no", "yes"], default: 0, response_url: "https://tool.example/choice" },
    { type: "view_update", group_id: inv.group_id, view_type: "progress", content: { done: 1 } },
  ]);
});

test("unknown operations and arguments the schema refuses get 200 and an error result", async () => {
  let ran = 0;
  const { url } = await start([defineTool("need", { inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false } }, () => { ran++; return "ran"; })]);
  const bad = invocation(cb.url, "need", { n: "one", extra: true });
  assert.equal((await post(url, "/invoke", bad)).status, 200);
  const r = await resultOf(bad);
  assert.match(r.json.text, /^error: invalid arguments for need: /);
  assert.match(r.json.text, /\/n must be integer/);
  assert.match(r.json.text, /additional properties/);
  const nope = invocation(cb.url, "nope");
  assert.equal((await post(url, "/invoke", nope)).status, 200);
  assert.equal((await resultOf(nope)).json.text, 'error: unknown operation "nope" (this server offers need)');
  assert.equal(ran, 0);
});

test("malformed invocations get 400 naming the field", async () => {
  const { url } = await start([defineTool("x", () => "x")]);
  const good = invocation(cb.url, "x");
  const cases = [
    [{ ...good, id: undefined }, 'field "id": missing'],
    [{ ...good, group_id: "a b" }, 'field "group_id": contains a control or space character'],
    [{ ...good, id: "x".repeat(257) }, 'field "id": 257 bytes long, more than 256'],
    [{ ...good, operation: "" }, 'field "operation": missing'],
    [{ ...good, callback_url: "ftp://x" }, 'field "callback_url": must be an http or https URL'],
    [{ ...good, callback_url: "not a url" }, 'field "callback_url": is not a valid URL'],
    [{ ...good, arguments: [1] }, 'field "arguments": must be an object'],
    [{ ...good, call_id: 5 }, 'field "call_id": must be a string or null'],
    ["{not json", /^malformed JSON/],
    ["[1]", "the body must be a JSON object"],
  ];
  for (const [body, want] of cases) {
    const r = await post(url, "/invoke", body);
    assert.equal(r.status, 400, JSON.stringify(body));
    if (want instanceof RegExp) assert.match(r.json.error, want);
    else assert.equal(r.json.error, want);
  }
  assert.equal((await fetch(url + "/invoke")).status, 405);
  assert.equal((await post(url, "/elsewhere", {})).status, 404);
  assert.equal((await post(url, "/migrate", {})).status, 501);
});

test("a handler that throws or returns nothing gets an error result; a bad return value is reported", async () => {
  const { url } = await start([
    defineTool("boom", () => { throw new Error("disk full"); }),
    defineTool("silent", () => undefined),
    defineTool("weird", () => 42),
  ]);
  for (const [op, want] of [["boom", "error: disk full"], ["silent", "error: silent finished without a result"], ["weird", /^error: rap: a result is a string or/]]) {
    const inv = invocation(cb.url, op);
    await post(url, "/invoke", inv);
    const r = await resultOf(inv);
    if (want instanceof RegExp) assert.match(r.json.text, want);
    else assert.equal(r.json.text, want);
  }
});

test("tool_call_status is alive while the call runs, false before, after and for unknown calls", async (t) => {
  const gate = gate_(t);
  const started = deferred();
  const { url, srv } = await start([defineTool("slow", async () => { started.resolve(); await gate.promise; return "ok"; })]);
  const inv = invocation(cb.url, "slow");
  const status = (thread, call) => post(url, "/tool_call_status", { thread_id: thread, tool_call_id: call });
  assert.deepEqual((await status(inv.group_id, inv.id)).json, { alive: false });
  await post(url, "/invoke", inv);
  await started.promise;
  assert.deepEqual(await status(inv.group_id, inv.id), { status: 200, json: { alive: true } });
  assert.deepEqual((await status("other", inv.id)).json, { alive: false });
  assert.equal(srv.runningCalls, 1);
  gate.resolve();
  await resultOf(inv);
  await idle(srv);
  assert.deepEqual((await status(inv.group_id, inv.id)).json, { alive: false });
  const bad = await post(url, "/tool_call_status", { thread_id: "t" });
  assert.deepEqual(bad, { status: 400, json: { error: 'field "tool_call_id": missing' } });
});

test("cancel_tool_call and close_thread abort the handler's signal; nothing is sent for a cancelled call", async () => {
  const aborted = [];
  const started = [];
  const { url, srv } = await start([defineTool("wait", (args, call) => new Promise((resolve, reject) => {
    started.push(call.id);
    call.signal.addEventListener("abort", () => { aborted.push(call.id); reject(call.signal.reason); });
  }))]);
  const a = invocation(cb.url, "wait");
  const b = invocation(cb.url, "wait", {}, { group_id: "thr_shared" });
  const c = invocation(cb.url, "wait", {}, { group_id: "thr_shared" });
  for (const inv of [a, b, c]) await post(url, "/invoke", inv);
  while (started.length < 3) await new Promise((r) => setImmediate(r));
  assert.equal((await post(url, "/cancel_tool_call", { thread_id: a.group_id, tool_call_id: a.id })).status, 200);
  assert.deepEqual(aborted, [a.id]);
  assert.equal((await post(url, "/close_thread", { thread_id: "thr_shared" })).status, 200);
  assert.deepEqual(aborted.sort(), [a.id, b.id, c.id].sort());
  await idle(srv);
  assert.equal(srv.runningCalls, 0);
  assert.equal(cb.bodies.filter((x) => [a.id, b.id, c.id].includes(x.json.id)).length, 0, "a cancelled call sent a result");
});

test("subscriptions: the result starts it, events are threaded, associative or final, each with an event_id", async () => {
  const { url } = await start([defineTool("sub", async (_, call) => {
    await call.subscribe("watching");
    await call.event("threaded");
    await call.event("inline", { associative: true });
    await call.event("the end", { associative: true, final: true });
  })]);
  const inv = invocation(cb.url, "sub");
  await post(url, "/invoke", inv);
  const last = await cb.waitFor((b) => b.json.final === true && b.json.tool_call_id === inv.id, "the final event");
  assert.ok(last);
  const mine = cb.bodies.filter((b) => b.json.id === inv.id || b.json.tool_call_id === inv.id).map((b) => b.json);
  assert.deepEqual(mine, [
    { type: "tool_result", group_id: inv.group_id, id: inv.id, call_id: inv.call_id, text: "watching", subscription: true },
    { type: "subscription_event", group_id: inv.group_id, tool_call_id: inv.id, text: "threaded", event_id: `${inv.id}.1` },
    { type: "subscription_event", group_id: inv.group_id, tool_call_id: inv.id, text: "inline", event_id: `${inv.id}.2`, associative: true },
    { type: "subscription_event", group_id: inv.group_id, tool_call_id: inv.id, text: "the end", event_id: `${inv.id}.3`, associative: true, final: true },
  ]);
});

test("a redelivered invocation is acknowledged and runs once", async () => {
  let runs = 0;
  const { url } = await start([defineTool("once", () => { runs++; return "ran"; })]);
  const inv = invocation(cb.url, "once");
  await post(url, "/invoke", inv);
  await post(url, "/invoke", inv); // while running or done
  await resultOf(inv);
  assert.equal((await post(url, "/invoke", inv)).status, 200);
  assert.equal(runs, 1);
  assert.equal(cb.bodies.filter((b) => b.json.id === inv.id).length, 1);
});

test("callbacks are retried on 5xx, never on 4xx", async () => {
  const { url, srv } = await start([defineTool("r", () => "delivered")]);
  const inv = invocation(cb.url, "r");
  cb.answer(503, 502);
  await post(url, "/invoke", inv);
  await resultOf(inv);
  assert.deepEqual(cb.bodies.filter((b) => b.json.id === inv.id).map((b) => b.status), [503, 502, 200]);

  const refused = invocation(cb.url, "r");
  cb.answer(400);
  await post(url, "/invoke", refused);
  await cb.waitFor((b) => b.json.id === refused.id, "the refused result");
  await idle(srv);
  assert.deepEqual(cb.bodies.filter((b) => b.json.id === refused.id).map((b) => b.status), [400], "a 4xx was retried or answered again");
});

test("postJSON: StatusError on 4xx, UnavailableError when 5xx and transport errors outlast the budget", async () => {
  cb.answer(404);
  await assert.rejects(postJSON(cb.url, { a: 1 }, { retry: fast }), (err) => err instanceof StatusError && err.status === 404 && /status 404/.test(err.body));
  cb.answer(500, 500, 500, 500);
  await assert.rejects(postJSON(cb.url, { a: 2 }, { retry: fast }), (err) => err instanceof UnavailableError && err.attempts === 4 && /HTTP 500/.test(err.last.message));
  // A port nobody listens on: every attempt is a transport error.
  await assert.rejects(postJSON("http://127.0.0.1:1/cb", {}, { retry: fast }), (err) => err instanceof UnavailableError && err.attempts === 4);
  const ctl = new AbortController();
  ctl.abort(new Error("caller gave up"));
  await assert.rejects(postJSON(cb.url, {}, { retry: fast, signal: ctl.signal }), /caller gave up/);
});

test("authorize guards every POST; maxRunning answers 503", async (t) => {
  const gate = gate_(t);
  const { url } = await start([defineTool("x", () => gate.promise.then(() => "ok"))], {
    maxRunning: 1,
    authorize: (req) => { if (req.headers.authorization !== "Bearer s3cret") throw new Error("bad token"); },
  });
  for (const p of ["/invoke", "/tool_call_status", "/cancel_tool_call", "/close_thread"]) {
    assert.deepEqual(await post(url, p, {}), { status: 401, json: { error: "bad token" } }, p);
  }
  const authed = (body) => fetch(url + "/invoke", { method: "POST", headers: { authorization: "Bearer s3cret" }, body: JSON.stringify(body) });
  assert.equal((await authed(invocation(cb.url, "x"))).status, 200);
  const second = await authed(invocation(cb.url, "x"));
  assert.equal(second.status, 503);
  assert.match((await second.json()).error, /too many calls/);
  gate.resolve();
  assert.equal((await fetch(url + "/.well-known/rap-toolset")).status, 200, "discovery needs no authorization");
});
