// A RAP tool server written from the specification's pages and examples
// (docs/docs/rap/spec/ of hydro-project/infinity), not from agentslice's Go
// types. It uses only Node's standard library.
//
// Usage: node spec_tool_server.js [port]   (0 or absent: any free port)
// It prints "LISTENING <port>" once it accepts connections. Calls are kept
// in memory only: a restarted server has forgotten them, as the spec's
// tool-call-status page describes.
'use strict';

const http = require('node:http');

const port = Number(process.argv[2] || 0);
let base = '';

// In-flight calls and subscriptions, by group_id + "/" + id.
const calls = new Map();
// Pending user choices, by tool call id.
const choices = new Map();

const toolset = () => ({
  name: 'spec-tools',
  description: 'A tool server written from the RAP specification examples',
  endpoint: base + '/invoke',
  tools: [
    {
      name: 'deploy',
      description: 'Deploy the service',
      inputSchema: { type: 'object', additionalProperties: false },
      // toolsets.md: requiresAuth is a string naming the auth provider;
      // custom annotations SHOULD be namespaced.
      annotations: { requiresAuth: 'github', destructive: true, 'x-mycompany-priority': 'high' },
      displayScript: '"deploy"',
    },
    { name: 'edit_file', description: 'Edit a file', inputSchema: { type: 'object' } },
    { name: 'read_image', description: 'Read an image file', inputSchema: { type: 'object' }, annotations: { readOnly: true } },
    { name: 'big_page', description: 'Fetch a large HTML page', inputSchema: { type: 'object' } },
    { name: 'authorize', description: 'Needs OAuth first', inputSchema: { type: 'object' }, annotations: { requiresAuth: 'github' } },
    { name: 'confirm', description: 'Asks the user first', inputSchema: { type: 'object' } },
    {
      name: 'subscribe_github_events',
      description: 'Subscribe to build output',
      inputSchema: { type: 'object' },
      annotations: { longRunning: true, 'x-team': 'infra' },
    },
    { name: 'hang', description: 'Never answers', inputSchema: { type: 'object' } },
    { name: 'forgetful', description: 'Works slowly, in memory only', inputSchema: { type: 'object' } },
  ],
});

function readJSON(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'));
      } catch (e) {
        reject(e);
      }
    });
    req.on('error', reject);
  });
}

function send(res, status, body) {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(text);
}

// transport.md: tools SHOULD retry callbacks on 5xx and transport errors
// with exponential backoff, and SHOULD NOT retry on 4xx.
async function callback(url, body) {
  const data = JSON.stringify(body);
  for (let attempt = 0; attempt < 6; attempt++) {
    try {
      const status = await new Promise((resolve, reject) => {
        const req = http.request(url, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode));
        });
        req.on('error', reject);
        req.end(data);
      });
      if (status < 500) return status;
    } catch (e) {
      // transport error: retry
    }
    await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
  }
  return 0;
}

// Every callback carries group_id and id, and echoes call_id when the
// invocation had one (tool-result.md, oauth.md, user-choice.md: MUST).
function reply(inv, fields) {
  const body = { group_id: inv.group_id, id: inv.id, ...fields };
  if (Object.prototype.hasOwnProperty.call(inv, 'call_id')) body.call_id = inv.call_id;
  return callback(inv.callback_url, body);
}

const PNG = 'iVBORw0KGgo=';

async function run(inv) {
  const key = inv.group_id + '/' + inv.id;
  switch (inv.operation) {
    case 'deploy': // tool-result.md, first example
      await reply(inv, {
        type: 'tool_result',
        text: 'Deployment completed successfully. Instance i-0abc123 is running.',
        display_as: [{ type: 'text', content: 'Deployed instance i-0abc123' }],
      });
      break;
    case 'edit_file': // tool-result.md, "A diff display with text fallback"
      await reply(inv, {
        type: 'tool_result',
        text: 'Replaced text in src/main.rs',
        display_as: [
          {
            type: 'diff',
            content: {
              path: 'src/main.rs',
              patch: '--- src/main.rs\n+++ src/main.rs\n@@ -1,3 +1,4 @@\n fn main() {\n+    println!("hello");\n }',
            },
          },
          { type: 'text', content: 'edit_file src/main.rs: 1 insertion' },
        ],
      });
      break;
    case 'read_image': // tool-result.md, multimodal content and image segment
      await reply(inv, {
        type: 'tool_result',
        content: [
          { type: 'text', text: 'Read image file "logo.png" (image/png, 8 bytes). The image is attached.' },
          { type: 'image', data: PNG, mediaType: 'image/png' },
        ],
        display_as: [
          { type: 'x-hologram', content: { frames: 3 } },
          { type: 'image', content: { data: PNG, mediaType: 'image/png' } },
          { type: 'text', content: 'logo.png' },
        ],
      });
      break;
    case 'big_page': {
      // About 700 KB of markup: <, > and & everywhere.
      const row = '<tr><td class=c>a &amp; b</td><td><a href=/x?y=1&z=2>link</a></td></tr>\n';
      const text = '<table>\n' + row.repeat(Math.floor((700 * 1024) / row.length)) + '</table>';
      await reply(inv, { type: 'tool_result', text });
      break;
    }
    case 'authorize': // oauth.md: oauth first, the result once authorized
      await reply(inv, { type: 'oauth', auth_url: 'https://github.com/login/oauth/authorize?client_id=abc&state=' + inv.id });
      await reply(inv, { type: 'tool_result', text: 'Authorized and done.' });
      break;
    case 'confirm': // user-choice.md
      calls.set(key, inv);
      choices.set(inv.id, inv);
      await reply(inv, {
        type: 'user_choice',
        prompt: 'Allow writing to the original directory?',
        choices: ['Yes for session', 'Yes once', 'No'],
        default: 2,
        response_url: base + '/user_choice_response',
      });
      return; // the result follows the user's answer
    case 'subscribe_github_events': // subscription-events.md
      calls.set(key, inv);
      await reply(inv, { type: 'tool_result', text: 'Subscribed to build output. Subscription ID: sub_abc', subscription: true });
      await callback(inv.callback_url, { type: 'view_update', group_id: inv.group_id, view_type: 'diff', content: { patch: 'diff --git a/x b/x' } });
      await callback(inv.callback_url, {
        type: 'subscription_event', group_id: inv.group_id, tool_call_id: inv.id,
        text: 'build output line 1\nbuild output line 2', associative: true,
      });
      // A final event may omit text.
      await callback(inv.callback_url, { type: 'subscription_event', group_id: inv.group_id, tool_call_id: inv.id, associative: true, final: true });
      calls.delete(key);
      return;
    case 'hang':
    case 'forgetful':
      calls.set(key, inv); // tracked (alive) but never answered
      return;
    default:
      // tool-invocation.md: acknowledged, the error comes as a tool_result.
      await reply(inv, { type: 'tool_result', text: 'Error: unknown operation ' + JSON.stringify(inv.operation) });
  }
  calls.delete(key);
}

const server = http.createServer(async (req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  if (req.method === 'GET' && path === '/.well-known/rap-toolset') return send(res, 200, toolset());
  if (req.method !== 'POST') return send(res, 405, { error: 'POST only' });
  let body;
  try {
    body = await readJSON(req);
  } catch (e) {
    return send(res, 400, { error: 'malformed JSON' });
  }
  switch (path) {
    case '/invoke':
      // Acknowledge at once, then work (tool-invocation.md).
      send(res, 200);
      setImmediate(() => run(body));
      return;
    case '/tool_call_status': {
      const t = body.thread_id, c = body.tool_call_id;
      if (typeof t !== 'string' || typeof c !== 'string' || !t || !c) return send(res, 400, { error: 'thread_id and tool_call_id are required' });
      return send(res, 200, { alive: calls.has(t + '/' + c) });
    }
    case '/cancel_tool_call':
      calls.delete(body.thread_id + '/' + body.tool_call_id);
      return send(res, 200);
    case '/close_thread':
      return send(res, 200);
    case '/user_choice_response': {
      const inv = choices.get(body.id);
      send(res, inv ? 200 : 404);
      if (inv) {
        choices.delete(body.id);
        calls.delete(inv.group_id + '/' + inv.id);
        await reply(inv, { type: 'tool_result', text: 'The user chose option ' + body.selected + '.' });
      }
      return;
    }
    default:
      return send(res, 404, { error: 'no such endpoint' });
  }
});

server.listen(port, '127.0.0.1', () => {
  base = 'http://127.0.0.1:' + server.address().port;
  process.stdout.write('LISTENING ' + server.address().port + '\n');
});
process.on('SIGTERM', () => process.exit(0));
