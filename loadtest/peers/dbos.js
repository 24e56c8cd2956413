// The peers workload on DBOS (issue 37), as its TypeScript SDK documents it:
// one durable workflow per agent (workflow ID = the agent) looping over its
// turns; DBOS.recv for the user message and for the tool result (sent from
// outside with DBOS.send, here through this process's small HTTP endpoint,
// the way a DBOS app takes a webhook); each completion a step
// (checkpointed to PostgreSQL). The conversation is the workflow's local
// state, rebuilt from the checkpoints on recovery.
//
//   PEERS_HARNESS_URL=... DBOS_SYSTEM_DATABASE_URL=... DBOS_SCHEMA=... PORT=9081 node dbos.js
'use strict';
const http = require('http');
const { DBOS } = require('@dbos-inc/dbos-sdk');
const { completion, userText } = require('./prose');
const { notify } = require('./common');

const DAY = 24 * 3600;

async function agentWorkflow(agent, turns) {
  const history = [];
  for (let turn = 0; turn < turns; turn++) {
    const user = await DBOS.recv('user', { timeoutSeconds: DAY });
    if (user === null) throw new Error(`${agent}: no user message for turn ${turn} within a day`);
    history.push({ role: 'user', text: userText(agent, turn) });
    const first = await DBOS.runStep(async () => completion(agent, turn, 0), { name: 'complete' });
    history.push(first);
    await DBOS.runStep(() => notify('/waiting', { agent, turn, id: DBOS.workflowID }), { name: 'announce' });
    const result = await DBOS.recv('tool', { timeoutSeconds: DAY });
    if (result === null) throw new Error(`${agent}: no tool result for turn ${turn} within a day`);
    history.push({ role: 'tool', tool_call_id: first.tool_call.id, text: result.text });
    const second = await DBOS.runStep(async () => completion(agent, turn, 1), { name: 'complete' });
    history.push(second);
    await DBOS.runStep(() => notify('/done', { agent, turn }), { name: 'done' });
  }
  return history.length;
}

const agentWF = DBOS.registerWorkflow(agentWorkflow, { name: 'agent' });

function readJSON(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => { body += d; });
    req.on('end', () => { try { resolve(JSON.parse(body)); } catch (e) { reject(new Error('body is not JSON: ' + e.message)); } });
    req.on('error', reject);
  });
}

async function main() {
  DBOS.setConfig({
    name: 'peers',
    systemDatabaseUrl: process.env.DBOS_SYSTEM_DATABASE_URL,
    systemDatabaseSchemaName: process.env.DBOS_SCHEMA,
    logLevel: 'warn',
  });
  await DBOS.launch();
  // POST /start {agent, turns}: starts the agent's workflow.
  // POST /send {id, topic, message}: DBOS.send to a workflow.
  const server = http.createServer(async (req, res) => {
    try {
      const b = await readJSON(req);
      if (req.url === '/start') {
        await DBOS.startWorkflow(agentWF, { workflowID: b.agent })(b.agent, b.turns);
      } else if (req.url === '/send') {
        await DBOS.send(b.id, b.message, b.topic);
      } else {
        res.writeHead(404).end('no route ' + req.url);
        return;
      }
      res.writeHead(204).end();
    } catch (err) {
      res.writeHead(500).end(String(err && err.stack || err));
    }
  });
  server.keepAliveTimeout = 60000;
  server.listen(Number(process.env.PORT || 9081), '127.0.0.1', () => console.log('dbos worker ready'));
  const stop = async () => { server.close(); await DBOS.shutdown(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err) => { console.error(err); process.exit(1); });
