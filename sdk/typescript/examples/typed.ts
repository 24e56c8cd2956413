// The SDK from TypeScript: typed arguments and results. Type-checked by
// `npm run typecheck` (tsc --noEmit); run the JavaScript examples with node.
import { RapServer, defineTool, display, ServeClient, type Call } from "@agentslice/rap";

interface Args {
  a: number;
  b: number;
}

const add = defineTool<Args>("add", {
  description: "Add two numbers.",
  inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  annotations: { readOnly: true, "x-team": "math" },
}, ({ a, b }) => ({ text: String(a + b), displayAs: [display.text(`${a} + ${b} = ${a + b}`)] }));

const server = new RapServer({ name: "math", tools: [add], retry: { attempts: 3 } });
server.tool("countdown", { description: "Count down as subscription events." }, async (_args: Record<string, never>, call: Call) => {
  await call.subscribe("counting");
  for (let i = 3; i > 0; i--) await call.event(String(i), { associative: true });
  await call.event("liftoff", { final: true });
});

export async function main(): Promise<void> {
  const { port } = await server.listen(0);
  const client = new ServeClient("http://127.0.0.1:8080");
  const events = await client.events("demo", { kinds: ["reply"] });
  await client.send("demo", `Add 2 and 3 with the tool server on port ${port}.`);
  for await (const ev of events) {
    const text: string = ev.data.text;
    console.log(ev.kind, ev.seq ?? "-", text);
    break;
  }
  await server.close();
}
