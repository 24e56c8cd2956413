// A small client for agentslice serve's HTTP API (docs/serve.md): send a
// message, read a thread, answer a user_choice, stream a thread's events.

/** A non-2xx answer from serve: status, and the error and field it named. */
export class ServeError extends Error {
  constructor(method, path, status, body) {
    const msg = body?.error ?? `HTTP ${status}`;
    super(`${method} ${path}: ${status}: ${msg}${body?.field ? ` (field ${body.field})` : ""}`);
    this.name = "ServeError";
    this.status = status;
    this.field = body?.field;
  }
}

export class ServeClient {
  /** baseUrl: where serve listens, e.g. http://127.0.0.1:8080. */
  constructor(baseUrl, { fetch: fetchFn = globalThis.fetch, headers = {} } = {}) {
    if (typeof baseUrl !== "string" || !/^https?:\/\//.test(baseUrl)) throw new TypeError(`serve client: baseUrl must be an http(s) URL, got ${baseUrl}`);
    this.base = baseUrl.replace(/\/+$/, "");
    this.fetch = fetchFn;
    this.headers = headers;
  }

  async #do(method, path, body) {
    const resp = await this.fetch(this.base + path, {
      method,
      headers: { accept: "application/json", ...(body !== undefined ? { "content-type": "application/json" } : {}), ...this.headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await resp.text();
    let v;
    try {
      v = text ? JSON.parse(text) : {};
    } catch {
      v = { error: text.slice(0, 300) };
    }
    if (!resp.ok) throw new ServeError(method, path, resp.status, v);
    return v;
  }

  /** send posts a user message; resolves to {id, thread_id}. Options: id (an idempotent retry), agent, userId. */
  send(threadId, text, { id, agent, userId } = {}) {
    const body = { text };
    if (id !== undefined) body.id = id;
    if (agent !== undefined) body.agent = agent;
    if (userId !== undefined) body.user_id = userId;
    return this.#do("POST", `/threads/${encodeURIComponent(threadId)}/messages`, body);
  }

  /** thread reads a thread: {id, status, state, items, ...}. */
  thread(threadId) {
    return this.#do("GET", `/threads/${encodeURIComponent(threadId)}`);
  }

  /** answerChoice answers the user_choice of call with the index selected. */
  answerChoice(threadId, callId, selected) {
    return this.#do("POST", `/threads/${encodeURIComponent(threadId)}/choices/${encodeURIComponent(callId)}`, { selected });
  }

  /** stop cancels the completion in flight and the pending call. */
  stop(threadId, reason) {
    return this.#do("POST", `/threads/${encodeURIComponent(threadId)}/stop`, reason === undefined ? {} : { reason });
  }

  /**
   * events connects to a thread's event stream (server-sent events) and
   * resolves, once serve has subscribed, to an async iterator of
   * {kind, seq?, data}: data is the event's JSON. Connect before sending to
   * see every live event. after replays history from a cursor (an event's
   * seq; 0: from the start); kinds keeps only those kinds; signal ends the
   * stream.
   */
  async events(threadId, { after, kinds, signal } = {}) {
    const q = new URLSearchParams();
    if (after !== undefined) q.set("after", String(after));
    if (kinds) q.set("kinds", kinds.join(","));
    const path = `/threads/${encodeURIComponent(threadId)}/events${q.size ? "?" + q : ""}`;
    const resp = await this.fetch(this.base + path, { headers: { accept: "text/event-stream", ...this.headers }, signal });
    if (!resp.ok) throw new ServeError("GET", path, resp.status, await resp.json().catch(() => ({})));
    return parseSSE(resp.body, signal);
  }
}

// parseSSE yields the events of a text/event-stream body.
async function* parseSSE(body, signal) {
  const decoder = new TextDecoder();
  let buf = "";
  let ev = { kind: "message", data: [] };
  try {
    for await (const chunk of body) {
      buf += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line === "") {
          if (ev.data.length) {
            const raw = ev.data.join("\n");
            let data;
            try {
              data = JSON.parse(raw);
            } catch {
              data = raw;
            }
            yield { kind: ev.kind, seq: ev.seq, data };
          }
          ev = { kind: "message", data: [] };
          continue;
        }
        if (line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (field === "event") ev.kind = value;
        else if (field === "data") ev.data.push(value);
        else if (field === "id" && /^\d+$/.test(value)) ev.seq = Number(value);
      }
    }
  } catch (err) {
    if (signal?.aborted) return;
    throw err;
  }
}
