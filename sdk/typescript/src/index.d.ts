// Types of @agentslice/rap. The sources are plain ES modules (no build step);
// these declarations describe them.
import type { IncomingMessage, ServerResponse } from "node:http";

/** A JSON Schema (draft 2020-12 by default) for a tool's arguments. */
export type JSONSchema = Record<string, unknown>;

/** Hints about a tool. requiresAuth names the auth provider; custom keys should be x-…. */
export interface Annotations {
  requiresAuth?: string;
  readOnly?: boolean;
  destructive?: boolean;
  idempotent?: boolean;
  longRunning?: boolean;
  [custom: `x-${string}`]: unknown;
}

export interface ToolSpec {
  description?: string;
  inputSchema?: JSONSchema;
  annotations?: Annotations;
}

export type ContentItem = { type: "text"; text: string } | { type: "image"; data: string; mediaType: string };

/** A display_as segment: for UIs only, the model gets text/content. */
export type DisplaySegment =
  | { type: "text"; content: string }
  | { type: "diff"; content: { path: string; patch: string } }
  | { type: "image"; content: { data: string; mediaType: string } }
  | { type: string; content?: unknown };

/** What a handler may return (or pass to call.result): text, or content items, with display segments. */
export type ToolResult = string | { text: string; content?: ContentItem[]; displayAs?: DisplaySegment[] } | { text?: string; content: ContentItem[]; displayAs?: DisplaySegment[] };

/** The invocation body the runtime POSTs. */
export interface Invocation {
  operation: string;
  arguments: Record<string, unknown>;
  id: string;
  call_id: string | null;
  callback_url: string;
  group_id: string;
  thread_ancestors?: string[];
  user_id?: string;
}

/** One invocation as a handler sees it, with the means to answer. */
export class Call {
  readonly invocation: Invocation;
  /** Aborted when the runtime cancels the call, closes its thread, or the server closes. */
  readonly signal: AbortSignal;
  readonly operation: string;
  readonly id: string;
  readonly groupId: string;
  readonly callId: string | null;
  readonly userId?: string;
  readonly threadAncestors: string[];
  /** post sends any callback body to the callback URL (retried on 5xx and transport errors). */
  post(body: Record<string, unknown>): Promise<string>;
  result(r: ToolResult): Promise<void>;
  subscribe(text: string): Promise<void>;
  event(text: string, opts?: { associative?: boolean; final?: boolean }): Promise<string>;
  oauth(authUrl: string): Promise<string>;
  choice(prompt: string, choices: string[], defaultIndex: number, responseUrl: string): Promise<string>;
  view(viewType: string, content: Record<string, unknown>): Promise<string>;
}

/** A handler: return the result (or send it through call), throw to report an error to the model. */
export type Handler<A = any> = (args: A, call: Call) => ToolResult | void | Promise<ToolResult | void | unknown>;

export interface Tool<A = any> {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JSONSchema;
  readonly annotations?: Annotations;
  readonly handler: Handler<A>;
}

export function defineTool<A = any>(name: string, spec: ToolSpec, handler: Handler<A>): Tool<A>;
export function defineTool<A = any>(name: string, handler: Handler<A>): Tool<A>;

export const display: {
  text(text: string): DisplaySegment;
  diff(path: string, patch: string): DisplaySegment;
  image(data: string, mediaType: string): DisplaySegment;
};

export interface RetryPolicy {
  attempts?: number;
  baseMs?: number;
  maxMs?: number;
  totalMs?: number;
  attemptTimeoutMs?: number;
}
export const defaultRetry: Readonly<Required<RetryPolicy>>;

export interface ServerOptions {
  name: string;
  description?: string;
  tools?: Tool[];
  publicUrl?: string;
  retry?: RetryPolicy;
  maxRunning?: number;
  authorize?: (req: IncomingMessage) => void | Promise<void>;
  logger?: { warn?(msg: string): void; error?(msg: string): void };
  fetch?: typeof fetch;
}

export const TOOLSET_PATH: "/.well-known/rap-toolset";
export const INVOKE_PATH: "/invoke";

export class RapServer {
  constructor(opts: ServerOptions);
  tool<A = any>(name: string, spec: ToolSpec, handler: Handler<A>): this;
  tool<A = any>(name: string, handler: Handler<A>): this;
  addTool(t: Tool): this;
  toolset(base: string): Record<string, unknown>;
  readonly runningCalls: number;
  handler(): (req: IncomingMessage, res: ServerResponse) => void;
  listen(port?: number, host?: string): Promise<{ port: number; url: string }>;
  close(): Promise<void>;
}

export class StatusError extends Error {
  readonly url: string;
  readonly status: number;
  readonly body: string;
}
export class UnavailableError extends Error {
  readonly url: string;
  readonly attempts: number;
  readonly last: unknown;
}
export function postJSON(url: string, body: unknown, opts?: { retry?: RetryPolicy; signal?: AbortSignal; fetch?: typeof fetch; headers?: Record<string, string> }): Promise<string>;

export class ServeError extends Error {
  readonly status: number;
  readonly field?: string;
}
export interface ServeEvent {
  kind: string;
  seq?: number;
  data: any;
}
export class ServeClient {
  constructor(baseUrl: string, opts?: { fetch?: typeof fetch; headers?: Record<string, string> });
  send(threadId: string, text: string, opts?: { id?: string; agent?: string; userId?: string }): Promise<{ id: string; thread_id: string }>;
  thread(threadId: string): Promise<any>;
  answerChoice(threadId: string, callId: string, selected: number): Promise<any>;
  stop(threadId: string, reason?: string): Promise<any>;
  /** Resolves once serve subscribed; iterate the events. */
  events(threadId: string, opts?: { after?: number; kinds?: string[]; signal?: AbortSignal }): Promise<AsyncGenerator<ServeEvent>>;
}
