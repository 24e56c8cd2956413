// The peers workload on Cloudflare's Agents SDK (issue 37), as its
// documentation recommends: one Agent (a Durable Object with its own
// SQLite database) per agent, addressed by name through routeAgentRequest
// (/agents/peer-agent/{name}/...); the conversation appended to the
// agent's own SQL table, one row per message (as the SDK's chat agents
// keep their messages); the tool result an external event, an HTTP
// request to the object. A Durable Object's storage writes are durable
// before its response leaves (the output gate), so a 200 means the turn's
// rows are on disk.
//
// Bundled by esbuild (cloudflare.go) with loadtest/density/words.txt as
// text and served by workerd with a local-disk Durable Object store.
import { Agent, routeAgentRequest } from 'agents';
import words from '../density/words.txt';
import { makeProse } from './prose_core.js';

const { completion, userText } = makeProse(words.split(/\s+/).filter(Boolean));

async function notify(env, path, body) {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(env.PEERS_HARNESS_URL + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (res.ok) return;
      throw new Error(`harness answered ${res.status} to ${path}`);
    } catch (err) {
      if (attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 50 * (attempt + 1)));
    }
  }
}

export class PeerAgent extends Agent {
  onStart() {
    this.sql`CREATE TABLE IF NOT EXISTS history (seq INTEGER PRIMARY KEY AUTOINCREMENT, turn INTEGER NOT NULL, role TEXT NOT NULL, body TEXT NOT NULL)`;
  }

  append(turn, msg) {
    this.sql`INSERT INTO history (turn, role, body) VALUES (${turn}, ${msg.role}, ${JSON.stringify(msg)})`;
  }

  async onRequest(request) {
    const url = new URL(request.url);
    const req = await request.json();
    const agent = this.name;
    const turn = req.turn;
    if (url.pathname.endsWith('/turn')) {
      // The user message, then a completion that ends in the tool call;
      // the agent then waits for the tool result, holding nothing.
      this.append(turn, { role: 'user', text: userText(agent, turn) });
      this.append(turn, completion(agent, turn, 0));
      await notify(this.env, '/waiting', { agent, turn, id: agent });
      return new Response('ok');
    }
    if (url.pathname.endsWith('/result')) {
      const [first] = this.sql`SELECT body FROM history WHERE turn = ${turn} AND role = 'assistant' ORDER BY seq LIMIT 1`;
      if (!first) return new Response(`no turn ${turn} waits for a tool result`, { status: 409 });
      const call = JSON.parse(first.body).tool_call;
      this.append(turn, { role: 'tool', tool_call_id: call.id, text: req.text });
      this.append(turn, completion(agent, turn, 1));
      await notify(this.env, '/done', { agent, turn });
      return new Response('ok');
    }
    return new Response('unknown operation', { status: 404 });
  }
}

export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === '/health') return new Response('ok');
    return (await routeAgentRequest(request, env)) ?? new Response('not found', { status: 404 });
  },
};
