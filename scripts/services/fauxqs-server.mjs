// Starts fauxqs on 127.0.0.1 only (its CLI binds every interface).
// Used by fauxqs.sh; the port comes from FAUXQS_PORT.
import { buildApp } from "fauxqs";

const port = Number.parseInt(process.env.FAUXQS_PORT ?? "", 10);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error(`fauxqs-server: FAUXQS_PORT must be a port number, got ${JSON.stringify(process.env.FAUXQS_PORT)}`);
  process.exit(2);
}

const app = buildApp({ logger: process.env.FAUXQS_LOGGER === "true" });
const address = await app.listen({ port, host: "127.0.0.1" });
console.log(`fauxqs listening on ${address}`);

const stop = async () => {
  await app.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
