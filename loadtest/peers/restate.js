// The peers workload on Restate (issue 37), as its TypeScript SDK documents
// it: one virtual object per agent, keyed by the agent; its conversation in
// the object's K/V state; each completion in ctx.run (journaled); the tool
// result an awakeable that the harness resolves from outside through the
// ingress (POST /restate/awakeables/{id}/resolve). The harness learns the
// awakeable's id from a journaled ctx.run that posts it to the harness.
//
//   PEERS_HARNESS_URL=http://127.0.0.1:PORT PORT=9080 node restate.js
'use strict';
// The SDK calls Promise.withResolvers (Node >= 22); this machine's Node is
// 20, so the standard function is supplied when missing.
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers() {
    let resolve, reject;
    const promise = new this((res, rej) => { resolve = res; reject = rej; });
    return { promise, resolve, reject };
  };
}
const restate = require('@restatedev/restate-sdk');
const { completion, userText } = require('./prose');
const { notify } = require('./common');

const agent = restate.object({
  name: 'agent',
  handlers: {
    // turn: the user message of turn `turn`, a completion ending in the tool
    // call, the wait for the tool result, a second completion.
    turn: async (ctx, req) => {
      const key = ctx.key;
      const turn = req.turn;
      const history = (await ctx.get('history')) ?? [];
      history.push({ role: 'user', text: userText(key, turn) });
      const first = await ctx.run('complete', () => completion(key, turn, 0));
      history.push(first);
      const tool = ctx.awakeable();
      await ctx.run('announce', () => notify('/waiting', { agent: key, turn, id: tool.id }));
      const result = await tool.promise;
      history.push({ role: 'tool', tool_call_id: first.tool_call.id, text: result.text });
      const second = await ctx.run('complete', () => completion(key, turn, 1));
      history.push(second);
      ctx.set('history', history);
      await ctx.run('done', () => notify('/done', { agent: key, turn }));
    },
  },
});

restate.endpoint().bind(agent).listen(Number(process.env.PORT || 9080));
