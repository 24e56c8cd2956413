// POSTing JSON to the runtime with bounded retries: 5xx answers and
// transport errors are retried with exponentially growing waits (full
// jitter); any other non-2xx answer is final and never retried (the runtime
// refused the body for good). This mirrors the Go kit's RetryPolicy.

/** A final non-2xx answer that is not retried (a 4xx, a 3xx). */
export class StatusError extends Error {
  constructor(url, status, body) {
    super(`POST ${url}: HTTP ${status}${body ? ": " + body : ""}`);
    this.name = "StatusError";
    this.url = url;
    this.status = status;
    this.body = body;
  }
}

/** The POST kept failing with 5xx or transport errors until the budget ran out. */
export class UnavailableError extends Error {
  constructor(url, attempts, last) {
    super(`POST ${url}: unavailable after ${attempts} attempts: ${last?.message ?? last}`);
    this.name = "UnavailableError";
    this.url = url;
    this.attempts = attempts;
    this.last = last;
  }
}

/** The retry policy's defaults: 8 attempts within 60s, as the Go kit's callbacks. */
export const defaultRetry = Object.freeze({ attempts: 8, baseMs: 100, maxMs: 2000, totalMs: 60000, attemptTimeoutMs: 10000 });

export function retryWithDefaults(p = {}) {
  const out = { ...defaultRetry };
  for (const k of Object.keys(defaultRetry)) {
    if (p[k] !== undefined) {
      if (typeof p[k] !== "number" || !(p[k] > 0)) throw new TypeError(`retry.${k} must be a positive number, got ${p[k]}`);
      out[k] = p[k];
    }
  }
  return out;
}

// sanitize makes a response snippet safe for an error message: one line, at
// most 300 characters.
function sanitize(s) {
  s = s.split(/\s+/).filter(Boolean).join(" ");
  return s.length > 300 ? s.slice(0, 300) + "..." : s;
}

function delay(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(signal.reason); };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * postJSON POSTs body as JSON to url, retrying per policy. It resolves on
 * any 2xx and rejects with a StatusError (final), an UnavailableError
 * (retries spent) or the signal's reason.
 */
export async function postJSON(url, body, { retry, signal, fetch: fetchFn = globalThis.fetch, headers } = {}) {
  const p = retryWithDefaults(retry);
  const data = JSON.stringify(body);
  const started = Date.now();
  let last;
  let attempt = 0;
  while (attempt < p.attempts) {
    if (attempt > 0) {
      const cap = Math.min(p.maxMs, p.baseMs * 2 ** (attempt - 1));
      const wait = Math.random() * cap + 1;
      if (Date.now() - started + wait > p.totalMs) break;
      await delay(wait, signal);
    }
    attempt++;
    const timeout = AbortSignal.timeout(p.attemptTimeoutMs);
    const sig = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let resp;
    try {
      resp = await fetchFn(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json", ...headers },
        body: data,
        signal: sig,
      });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      last = err;
      continue; // transport error: retried
    }
    const text = await resp.text().catch(() => "");
    if (resp.status >= 200 && resp.status < 300) return text;
    if (resp.status >= 500) {
      last = new Error(`HTTP ${resp.status}: ${sanitize(text)}`);
      continue;
    }
    throw new StatusError(url, resp.status, sanitize(text));
  }
  throw new UnavailableError(url, attempt, last ?? new Error("retry budget spent"));
}
