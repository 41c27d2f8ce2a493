// The harness of the SDK client scenarios (meta.mjs, fork.mjs, ...): it runs
// crow-acp as a child process and talks to it with the official TypeScript
// SDK's ClientApp (2.4.0).
//
// The SDK alone is a lenient reader: it does not validate responses at all,
// an invalid session/update is only logged and dropped, and a malformed
// optional field (usage_update.cost, a prompt response's usage, ...) is
// silently read as absent. So every frame the agent sends is checked here
// first, on the wire, with the SDK's own zod schemas (the unstable v1 set its
// ClientApp uses): the frame must parse, and the SDK must read back exactly
// what was sent (nothing dropped, nothing salvaged to a default). Anything
// else closes the connection with an error naming the frame, which fails the
// scenario.
//
// Usage: node SCENARIO.mjs CROW_ACP_BINARY WORK_DIR, with the agent's
// environment (CROW_DB, OPENAI_BASE_URL, ...) in node's own environment.
// CROW_SDK_TAMPER (tests of this harness only) rewrites one update before
// the check: {"update":"usage_update","set":{...}} merges set into the first
// update of that kind.
import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { ClientApp, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

// The generated schemas are not in the package's exports map: load them by
// path, next to the entry point the SDK's ClientApp comes from (resolved with
// require.resolve, which Debian's node 18 has, unlike import.meta.resolve).
const entry = createRequire(import.meta.url).resolve("@agentclientprotocol/sdk/unstable");
const z = await import(new URL("./schema/zod.gen.js", pathToFileURL(entry)));

export const [bin, dir] = process.argv.slice(2);

// What the client asked, by method: the schema of the agent's result.
const resultSchemas = {
  initialize: z.zInitializeResponse,
  authenticate: z.zAuthenticateResponse,
  logout: z.zLogoutResponse,
  "auth/status": z.zAuthStatusResponse,
  "session/new": z.zNewSessionResponse,
  "session/load": z.zLoadSessionResponse,
  "session/resume": z.zResumeSessionResponse,
  "session/list": z.zListSessionsResponse,
  "session/fork": z.zForkSessionResponse,
  "session/archive": z.zArchiveSessionResponse,
  "session/unarchive": z.zUnarchiveSessionResponse,
  "session/status": z.zSessionStatusResponse,
  "session/set_title": z.zSetSessionTitleResponse,
  "session/set_mode": z.zSetSessionModeResponse,
  "session/set_config_option": z.zSetSessionConfigOptionResponse,
  "session/close": z.zCloseSessionResponse,
  "session/delete": z.zDeleteSessionResponse,
  "session/prompt": z.zPromptResponse,
};
// What the agent may send on its own: requests and notifications.
const requestSchemas = {
  "session/request_permission": z.zRequestPermissionRequest,
  "elicitation/create": z.zCreateElicitationRequest,
  "fs/read_text_file": z.zReadTextFileRequest,
  "fs/write_text_file": z.zWriteTextFileRequest,
  "terminal/create": z.zCreateTerminalRequest,
};
const notificationSchemas = {
  "session/update": z.zSessionNotification,
  "elicitation/complete": z.zCompleteElicitationNotification,
  "auth/status_update": z.zAuthStatusUpdateNotification,
};

// strict parses value with schema and requires the SDK to read it as sent.
export function strict(schema, value, what) {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new Error(`${what}: the SDK rejects it: ${r.error.message}\n${JSON.stringify(value)}`);
  }
  const diff = firstDiff(value, r.data, "");
  if (diff) {
    throw new Error(`${what}: the SDK does not read it as sent (${diff})\n${JSON.stringify(value)}`);
  }
  return r.data;
}

// firstDiff names the first place where what the SDK read differs from
// what was sent: a key it dropped (unknown to the schema, or salvaged to
// absent) or a value it changed.
function firstDiff(sent, read, path) {
  const show = (v) => JSON.stringify(v) ?? "absent";
  if (sent === null || typeof sent !== "object" || read === null || typeof read !== "object" ||
    Array.isArray(sent) !== Array.isArray(read)) {
    return isDeepStrictEqual(sent, read) ? "" : `${path || "."}: sent ${show(sent)}, read ${show(read)}`;
  }
  if (Array.isArray(sent)) {
    if (sent.length !== read.length) return `${path}: ${sent.length} items sent, ${read.length} read`;
    for (let i = 0; i < sent.length; i++) {
      const d = firstDiff(sent[i], read[i], `${path}[${i}]`);
      if (d) return d;
    }
    return "";
  }
  for (const k of Object.keys(sent)) {
    const d = firstDiff(sent[k], read[k], `${path}.${k}`);
    if (d) return d;
  }
  return ""; // keys read but not sent are the schema's defaults (mcpCapabilities.acp: false)
}

const tamper = process.env.CROW_SDK_TAMPER ? JSON.parse(process.env.CROW_SDK_TAMPER) : null;

// checked wraps the SDK's message stream: each frame from the agent is
// checked before the SDK sees it; the client's requests are noted so that
// each result is checked against its method's schema.
function checked(stream, label) {
  const asked = new Map();
  const out = new TransformStream({
    transform(msg, c) {
      if ("method" in msg && "id" in msg) asked.set(msg.id, msg.method);
      c.enqueue(msg);
    },
  });
  out.readable.pipeTo(stream.writable).catch(() => {});
  let n = 0;
  const check = (msg) => {
    n++;
    const what = `${label}, frame ${n} from the agent`;
    if (msg.jsonrpc !== "2.0") throw new Error(`${what}: jsonrpc is not "2.0": ${JSON.stringify(msg)}`);
    if ("method" in msg) {
      if (msg.method.startsWith("_")) return; // an extension
      const schema = ("id" in msg ? requestSchemas : notificationSchemas)[msg.method];
      if (!schema) throw new Error(`${what}: unknown method ${msg.method}`);
      if (tamper && msg.method === "session/update" && msg.params?.update?.sessionUpdate === tamper.update) {
        Object.assign(msg.params.update, tamper.set);
        tamper.update = null; // once
      }
      strict(schema, msg.params, `${what} (${msg.method})`);
      return;
    }
    const method = asked.get(msg.id);
    if (!method) throw new Error(`${what}: a response to no request: ${JSON.stringify(msg)}`);
    asked.delete(msg.id);
    if ("error" in msg) strict(z.zError, msg.error, `${what} (error for ${method})`);
    else strict(resultSchemas[method], msg.result, `${what} (result of ${method})`);
  };
  const readable = stream.readable.pipeThrough(new TransformStream({
    transform(msg, c) {
      check(msg);
      c.enqueue(msg);
    },
  }));
  return { readable, writable: out.writable };
}

let agents = 0;

// withAgent starts a crow-acp process, connects the SDK's ClientApp to it,
// initializes with clientCapabilities and runs op(client, init). client.call
// sends a request and waits until every update sent before the answer has
// reached the SDK's handler; client.updates holds those updates (each the
// SDK's parsed SessionNotification) in arrival order. handlers maps client
// methods (elicitation/create, ...) to the SDK request handlers to register.
export async function withAgent({ clientCapabilities = {}, handlers = {} }, op) {
  const label = `agent process ${++agents}`;
  const log = fs.openSync(`${dir}/agent-${agents}.log`, "w");
  const child = spawn(bin, [], { env: process.env, stdio: ["pipe", "pipe", log] });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const updates = [];
  const app = new ClientApp().onNotification("session/update", (c) => { updates.push(c.params); });
  for (const [method, handler] of Object.entries(handlers)) app.onRequest(method, handler);
  try {
    await app.connectWith(checked(stream, label), async (cx) => {
      const client = {
        updates,
        async call(method, params) {
          const result = await cx.request(method, params);
          await new Promise((resolve) => setImmediate(resolve)); // the handlers of earlier frames finish
          return result;
        },
      };
      const init = await client.call("initialize", { protocolVersion: 1, clientCapabilities });
      await op(client, init);
    });
  } finally {
    child.stdin.end();
    await exited;
    fs.closeSync(log);
  }
}

// transcript renders a session's message updates (what a client shows after
// session/load: no commands, usage or title updates) as short lines.
export function transcript(updates, sessionId) {
  const lines = [];
  for (const { sessionId: sid, update: u } of updates) {
    if (sid !== sessionId) continue;
    switch (u.sessionUpdate) {
      case "user_message_chunk":
      case "agent_message_chunk":
        lines.push(`${u.sessionUpdate === "user_message_chunk" ? "user" : "agent"}: ${u.content.text}`);
        break;
      case "tool_call":
        lines.push(`tool ${u.toolCallId} ${u.kind} ${u.status}: ${u.title}`);
        break;
      case "tool_call_update":
        if (u.status === "completed" || u.status === "failed") {
          lines.push(`tool ${u.toolCallId} ${u.status}: ${u.content?.map((c) => c.content?.text).join("")}`);
        }
        break;
      case "subagent_update":
        lines.push(`subagent ${u.sessionId} ${[u.state?.state, u.state?.stopReason].filter(Boolean).join(" ")}`);
        break;
    }
  }
  return lines;
}
