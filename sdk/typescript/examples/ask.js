// Drive agentslice serve from a program: send a message to a thread, print
// the thread's events as they stream until the agent replies, then read the
// thread back.
// Run: node examples/ask.js http://127.0.0.1:8080 my-thread "Is example.com up?"
import { ServeClient } from "@agentslice/rap";

const [base = "http://127.0.0.1:8080", thread = "ask-demo", text = "Hello!"] = process.argv.slice(2);
const client = new ServeClient(base);
const stop = new AbortController();
const events = await client.events(thread, { kinds: ["message", "tool_call", "tool_result", "user_choice", "reply", "error"], signal: stop.signal });

const sent = await client.send(thread, text);
console.log(`sent ${sent.id} to ${sent.thread_id}`);
for await (const ev of events) {
  const d = ev.data;
  if (ev.kind === "tool_call") console.log(`tool_call ${d.tool} ${typeof d.args === "string" ? d.args : JSON.stringify(d.args)}`);
  else if (ev.kind === "tool_result") console.log(`tool_result ${d.tool}${d.is_error ? " (error)" : ""}: ${d.text}`);
  else if (ev.kind === "user_choice") {
    console.log(`choice ${d.choice.prompt}: answering ${d.choice.choices[d.choice.default]}`);
    await client.answerChoice(thread, d.call_id, d.choice.default);
  } else console.log(`${ev.kind}: ${d.text}`);
  if (ev.kind === "reply" || ev.kind === "error") break;
}
stop.abort();
const th = await client.thread(thread);
console.log(`thread ${th.id}: ${th.items.length} items`);
