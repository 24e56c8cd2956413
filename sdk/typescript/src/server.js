// A RAP tool server: the toolset at /.well-known/rap-toolset (advertising
// {base}/invoke as its endpoint), invocations acknowledged with 200 at once
// and run afterwards, /tool_call_status, /cancel_tool_call, /close_thread.
// Every answer to the runtime goes to the invocation's callback_url (signed
// by the runtime: the tool only POSTs to it) with retries on 5xx and
// transport errors, never on 4xx. The behaviour follows agentslice's Go kit
// (rapkit/kit.go), so a tool behaves the same in either language.

import http from "node:http";
import { Ajv2020 } from "ajv/dist/2020.js";
import { postJSON, retryWithDefaults, StatusError } from "./post.js";

export const TOOLSET_PATH = "/.well-known/rap-toolset";
export const INVOKE_PATH = "/invoke";
const MAX_BODY = 4 << 20;
const MAX_ID = 256;
const NAME_RE = /^[A-Za-z0-9_-]{1,128}$/;

/** A request the server refuses: answered with status and {"error"}. */
class HTTPError extends Error {
  constructor(status, field, reason) {
    super(field ? `field "${field}": ${reason}` : reason);
    this.status = status;
  }
}

/**
 * defineTool returns a tool for RapServer: name, {description, inputSchema,
 * annotations} and the handler run for each call.
 */
export function defineTool(name, spec, handler) {
  if (typeof spec === "function" && handler === undefined) [spec, handler] = [{}, spec];
  if (typeof name !== "string" || !NAME_RE.test(name)) {
    throw new TypeError(`rap: tool name ${JSON.stringify(name)} must be 1..128 characters of [A-Za-z0-9_-]`);
  }
  if (typeof handler !== "function") throw new TypeError(`rap: tool ${name} has no handler function`);
  spec = spec ?? {};
  const inputSchema = spec.inputSchema ?? { type: "object" };
  if (inputSchema === null || typeof inputSchema !== "object" || Array.isArray(inputSchema)) {
    throw new TypeError(`rap: tool ${name}: inputSchema must be a JSON Schema object`);
  }
  if (spec.annotations !== undefined && (spec.annotations === null || typeof spec.annotations !== "object" || Array.isArray(spec.annotations))) {
    throw new TypeError(`rap: tool ${name}: annotations must be an object`);
  }
  if (spec.annotations?.requiresAuth !== undefined && typeof spec.annotations.requiresAuth !== "string") {
    throw new TypeError(`rap: tool ${name}: annotations.requiresAuth must be a string naming the auth provider`);
  }
  return Object.freeze({ name, description: spec.description ?? "", inputSchema, annotations: spec.annotations, handler });
}

function checkID(field, v) {
  if (typeof v !== "string" || v === "") throw new HTTPError(400, field, v === undefined || v === "" ? "missing" : "must be a string");
  if (Buffer.byteLength(v) > MAX_ID) throw new HTTPError(400, field, `${Buffer.byteLength(v)} bytes long, more than ${MAX_ID}`);
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f]/.test(v)) throw new HTTPError(400, field, "contains a control or space character");
}

function checkURL(field, v) {
  let u;
  try {
    u = new URL(v);
  } catch {
    throw new HTTPError(400, field, v ? "is not a valid URL" : "missing");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new HTTPError(400, field, "must be an http or https URL");
}

function ajvError(errors) {
  return (errors ?? []).map((e) => `${e.instancePath || "(root)"} ${e.message}`).join("; ");
}

/** A Call is one invocation as a handler sees it, with the means to answer. */
export class Call {
  constructor(server, inv, signal) {
    this.server = server;
    this.invocation = inv;
    this.signal = signal;
    this.operation = inv.operation;
    this.id = inv.id;
    this.groupId = inv.group_id;
    this.callId = inv.call_id ?? null;
    this.userId = inv.user_id;
    this.threadAncestors = inv.thread_ancestors ?? [];
    this.resulted = false;
    this.seq = 0;
  }

  /** post sends a callback body to the call's callback URL, with retries. */
  post(body) {
    return postJSON(this.invocation.callback_url, body, { retry: this.server.retry, signal: this.signal, fetch: this.server.fetch });
  }

  async #result(r) {
    const body = { type: "tool_result", group_id: this.groupId, id: this.id, call_id: this.callId, ...r };
    try {
      await this.post(body);
      this.resulted = true;
    } catch (err) {
      if (err instanceof StatusError) this.resulted = true; // refused for good: send no other
      throw err;
    }
  }

  /**
   * result sends the call's result: a string (text), or {text}, {content}
   * (items {type:"text",text} / {type:"image",data,mediaType}; content wins
   * over text), with displayAs segments for UIs ({type, content}).
   */
  result(r) {
    return this.#result(normalizeResult(r));
  }

  /** subscribe sends the call's result and starts a subscription: events follow until one is final. */
  subscribe(text) {
    return this.#result({ text: String(text), subscription: true });
  }

  /**
   * event sends one subscription event: threaded by default (a child thread),
   * associative inline in the subscribing thread, final ends it.
   */
  event(text, { associative = false, final = false } = {}) {
    this.seq++;
    const body = { type: "subscription_event", group_id: this.groupId, tool_call_id: this.id, text: String(text), event_id: `${this.id}.${this.seq}` };
    if (associative) body.associative = true;
    if (final) body.final = true;
    return this.post(body);
  }

  /** oauth asks the user to authorize at authUrl; the call stays pending. */
  oauth(authUrl) {
    return this.post({ type: "oauth", group_id: this.groupId, id: this.id, call_id: this.callId, auth_url: authUrl });
  }

  /** choice asks the user to pick one of choices; {id, selected} is POSTed to responseUrl. */
  choice(prompt, choices, defaultIndex, responseUrl) {
    if (!Array.isArray(choices) || choices.length === 0) throw new TypeError("rap: choice needs at least one choice");
    if (!Number.isInteger(defaultIndex) || defaultIndex < 0 || defaultIndex >= choices.length) {
      throw new TypeError(`rap: choice default ${defaultIndex} is not an index of the ${choices.length} choices`);
    }
    return this.post({ type: "user_choice", group_id: this.groupId, id: this.id, call_id: this.callId, prompt, choices, default: defaultIndex, response_url: responseUrl });
  }

  /** view replaces the thread's view of viewType with content (a JSON object). */
  view(viewType, content) {
    return this.post({ type: "view_update", group_id: this.groupId, view_type: viewType, content });
  }
}

/** Display segments, as the spec nests them. */
export const display = Object.freeze({
  text: (text) => ({ type: "text", content: text }),
  diff: (path, patch) => ({ type: "diff", content: { path, patch } }),
  image: (data, mediaType) => ({ type: "image", content: { data, mediaType } }),
});

function normalizeResult(r) {
  if (typeof r === "string") return { text: r };
  if (r === null || typeof r !== "object") throw new TypeError(`rap: a result is a string or {text|content, displayAs?}, got ${r === null ? "null" : typeof r}`);
  const out = {};
  if (r.content !== undefined) {
    if (!Array.isArray(r.content) || r.content.length === 0) throw new TypeError("rap: result content must be a non-empty array");
    out.content = r.content;
  }
  if (r.text !== undefined) out.text = String(r.text);
  if (out.text === undefined && out.content === undefined) throw new TypeError("rap: a result needs text or content");
  const segs = r.displayAs ?? r.display_as;
  if (segs !== undefined) out.display_as = Array.isArray(segs) ? segs : [segs];
  return out;
}

/**
 * RapServer is a RAP tool server. Add tools with tool() or the tools
 * option, then listen(port). Options: name (required), description, tools,
 * publicUrl (the base the runtime reaches it at; derived from each toolset
 * request when unset), retry ({attempts, baseMs, maxMs, totalMs,
 * attemptTimeoutMs}), maxRunning (default 64; more calls get 503),
 * authorize(req) (throw to answer 401), logger (console-like).
 */
export class RapServer {
  constructor(opts = {}) {
    if (typeof opts.name !== "string" || opts.name.length < 1 || opts.name.length > 128) {
      throw new TypeError("rap: server name must be 1..128 characters");
    }
    this.name = opts.name;
    this.description = opts.description;
    this.publicUrl = opts.publicUrl?.replace(/\/+$/, "");
    this.retry = retryWithDefaults(opts.retry);
    this.maxRunning = opts.maxRunning ?? 64;
    this.authorize = opts.authorize;
    this.logger = opts.logger ?? console;
    this.fetch = opts.fetch ?? globalThis.fetch;
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    this.tools = new Map();
    this.running = new Map(); // key -> {thread, controller, promise}
    this.done = new Set(); // keys already run: a redelivered dispatch is acknowledged only
    this.stopped = false;
    this.httpServer = null;
    for (const t of opts.tools ?? []) this.addTool(t);
  }

  /** tool defines and adds a tool (see defineTool); it returns the server. */
  tool(name, spec, handler) {
    return this.addTool(defineTool(name, spec, handler));
  }

  /** addTool adds a tool made by defineTool. */
  addTool(t) {
    if (this.tools.has(t.name)) throw new TypeError(`rap: tool ${t.name} is defined twice`);
    let validate;
    try {
      validate = this.ajv.compile(t.inputSchema);
    } catch (err) {
      throw new TypeError(`rap: tool ${t.name}: inputSchema does not compile: ${err.message}`);
    }
    this.tools.set(t.name, { ...t, validate });
    return this;
  }

  /** toolset returns the document served for a server reachable at base. */
  toolset(base) {
    const doc = { name: this.name, endpoint: base.replace(/\/+$/, "") + INVOKE_PATH, tools: [] };
    if (this.description) doc.description = this.description;
    for (const t of this.tools.values()) {
      const d = { name: t.name, description: t.description, inputSchema: t.inputSchema };
      if (t.annotations) d.annotations = t.annotations;
      doc.tools.push(d);
    }
    return doc;
  }

  /** The number of calls in progress. */
  get runningCalls() {
    return this.running.size;
  }

  /** handler returns the (req, res) function, to mount in another node:http server. */
  handler() {
    return (req, res) => this.#serve(req, res).catch((err) => {
      this.logger.error?.(`rap: serving ${req.url}: ${err.stack ?? err}`);
      if (!res.headersSent) send(res, 500, { error: "internal error" });
    });
  }

  /**
   * listen serves on port (0 picks one) and host (default 127.0.0.1);
   * it resolves to {port, url} once listening.
   */
  listen(port = 0, host = "127.0.0.1") {
    if (this.tools.size === 0) throw new TypeError("rap: the server has no tools");
    this.httpServer = http.createServer(this.handler());
    return new Promise((resolve, reject) => {
      this.httpServer.once("error", reject);
      this.httpServer.listen(port, host, () => {
        const a = this.httpServer.address();
        resolve({ port: a.port, url: `http://${host.includes(":") ? `[${host}]` : host}:${a.port}` });
      });
    });
  }

  /** close refuses new calls, aborts running ones, waits for them and stops listening. */
  async close() {
    this.stopped = true;
    for (const rc of this.running.values()) rc.controller.abort(new Error("server stopping"));
    await Promise.allSettled([...this.running.values()].map((rc) => rc.promise));
    if (this.httpServer) {
      this.httpServer.closeAllConnections?.();
      await new Promise((r) => this.httpServer.close(() => r()));
    }
  }

  async #serve(req, res) {
    const path = new URL(req.url, "http://x").pathname;
    try {
      if (path.endsWith(TOOLSET_PATH)) {
        if (req.method !== "GET" && req.method !== "HEAD") throw new HTTPError(405, "", "GET the toolset");
        const base = this.publicUrl ?? requestBase(req, path.slice(0, -TOOLSET_PATH.length));
        return send(res, 200, this.toolset(base));
      }
      if (req.method !== "POST") throw new HTTPError(405, "", `POST to ${path}`);
      if (this.authorize) {
        try {
          await this.authorize(req);
        } catch (err) {
          throw new HTTPError(401, "", err?.message ?? String(err));
        }
      }
      const body = await readJSON(req);
      if (path.endsWith(INVOKE_PATH)) return send(res, 200, this.#invoke(body));
      if (path.endsWith("/cancel_tool_call")) {
        this.#cancel((key) => key === callKey(body.thread_id, body.tool_call_id));
        return send(res, 200, { status: "accepted" });
      }
      if (path.endsWith("/close_thread")) {
        this.#cancel((_, rc) => rc.thread === body.thread_id);
        return send(res, 200, { status: "accepted" });
      }
      if (path.endsWith("/tool_call_status")) {
        checkID("thread_id", body.thread_id);
        checkID("tool_call_id", body.tool_call_id);
        return send(res, 200, { alive: this.running.has(callKey(body.thread_id, body.tool_call_id)) });
      }
      if (path.endsWith("/migrate")) throw new HTTPError(501, "", "this server does not migrate sessions");
      throw new HTTPError(404, "", `no such endpoint ${path}`);
    } catch (err) {
      if (!(err instanceof HTTPError)) throw err;
      send(res, err.status, { error: err.message });
    }
  }

  #invoke(inv) {
    if (typeof inv.operation !== "string" || inv.operation === "") throw new HTTPError(400, "operation", "missing");
    checkID("id", inv.id);
    checkID("group_id", inv.group_id);
    checkURL("callback_url", inv.callback_url);
    if (inv.call_id !== undefined && inv.call_id !== null && typeof inv.call_id !== "string") {
      throw new HTTPError(400, "call_id", "must be a string or null");
    }
    if (inv.arguments === undefined || inv.arguments === null) inv.arguments = {};
    if (typeof inv.arguments !== "object" || Array.isArray(inv.arguments)) throw new HTTPError(400, "arguments", "must be an object");
    // A bad operation or bad arguments are acknowledged and answered with
    // an error result, through the same path as a tool that fails.
    let tool = this.tools.get(inv.operation);
    if (!tool) {
      const names = [...this.tools.keys()].join(", ") || "no tools";
      tool = failing(inv.operation, `unknown operation ${JSON.stringify(inv.operation.slice(0, 140))} (this server offers ${names})`);
    } else if (!tool.validate(inv.arguments)) {
      tool = failing(inv.operation, `invalid arguments for ${inv.operation}: ${ajvError(tool.validate.errors)}`);
    }
    const key = callKey(inv.group_id, inv.id);
    if (this.stopped) throw new HTTPError(503, "", "server is not running");
    if (this.running.has(key) || this.done.has(key)) return { status: "accepted" }; // a redelivered dispatch
    if (this.running.size >= this.maxRunning) throw new HTTPError(503, "", "too many calls in progress; retry later");
    const controller = new AbortController();
    const rc = { thread: inv.group_id, controller, promise: null };
    this.running.set(key, rc);
    const call = new Call(this, inv, controller.signal);
    // setImmediate: the 200 goes out before the handler starts its work.
    rc.promise = new Promise((r) => setImmediate(r)).then(() => this.#run(key, tool, call));
    return { status: "accepted" };
  }

  async #run(key, tool, call) {
    let err, value;
    try {
      value = await tool.handler(call.invocation.arguments, call);
    } catch (e) {
      err = e;
    }
    try {
      if (call.signal.aborted) return; // cancelled: nothing is sent
      if (!call.resulted && err === undefined && value !== undefined) {
        try {
          return await call.result(value);
        } catch (e) {
          if (e instanceof TypeError) err = e; // a malformed return value: tell the model
          else throw e;
        }
      }
      if (call.resulted) {
        if (err !== undefined) this.logger.warn?.(`rap: tool ${tool.name} failed after sending its result: ${err?.message ?? err}`);
        return;
      }
      const text = err === undefined ? `error: ${tool.name} finished without a result` : `error: ${err?.message ?? String(err)}`;
      await call.result(text);
    } catch (e) {
      if (!call.signal.aborted) this.logger.warn?.(`rap: could not deliver the result of ${tool.name} call ${call.id}: ${e?.message ?? e}`);
    } finally {
      this.running.delete(key);
      this.done.add(key);
      if (this.done.size > 10000) this.done.delete(this.done.values().next().value);
    }
  }

  #cancel(match) {
    for (const [key, rc] of this.running) {
      if (match(key, rc)) rc.controller.abort(new Error("the runtime cancelled the call"));
    }
  }
}

function failing(name, message) {
  return { name, handler: () => { throw new Error(message); } };
}

function callKey(thread, call) {
  return JSON.stringify([thread, call]);
}

function requestBase(req, prefix) {
  let scheme = req.socket.encrypted ? "https" : "http";
  const fp = req.headers["x-forwarded-proto"];
  if (fp === "http" || fp === "https") scheme = fp;
  return `${scheme}://${req.headers.host}${prefix}`;
}

async function readJSON(req) {
  const chunks = [];
  let n = 0;
  for await (const c of req) {
    n += c.length;
    if (n > MAX_BODY) throw new HTTPError(413, "", "body too large");
    chunks.push(c);
  }
  let v;
  try {
    v = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch (err) {
    throw new HTTPError(400, "", `malformed JSON: ${err.message}`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new HTTPError(400, "", "the body must be a JSON object");
  return v;
}

function send(res, status, body) {
  const b = JSON.stringify(body) + "\n";
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(b) });
  res.end(b);
}
