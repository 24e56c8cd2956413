// @agentslice/rap: RAP tool servers and a client for agentslice serve.
export { RapServer, Call, defineTool, display, TOOLSET_PATH, INVOKE_PATH } from "./server.js";
export { postJSON, StatusError, UnavailableError, defaultRetry } from "./post.js";
export { ServeClient, ServeError } from "./client.js";
