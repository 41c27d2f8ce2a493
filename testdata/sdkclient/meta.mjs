// Drives crow-acp with the official TypeScript SDK client (2.4.0): every
// response and update is parsed by the SDK's own schema types, so a shape
// it rejects fails here. Run by cmd/crow-acp's TestSDKClientMeta when
// CROW_SDK_DIR names a directory with @agentclientprotocol/sdk installed.
//
//   node meta.mjs CROW_ACP_BINARY MODEL_URL WORK_DIR
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import assert from "node:assert/strict";
import { ClientApp, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

const [bin, modelURL, dir] = process.argv.slice(2);
const child = spawn(bin, [], {
  env: { PATH: process.env.PATH, HOME: dir, XDG_CONFIG_HOME: dir, OPENAI_BASE_URL: modelURL, OPENAI_API_KEY: "",
    CROW_DB: dir + "/crow.db", CROW_MODELS: "gpt-4o-mini;window=8192", CROW_MODEL: "gpt-4o-mini" },
  stdio: ["pipe", "pipe", "ignore"],
});
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
const app = new ClientApp().onNotification("session/update", (c) => { updates.push(c.params.update); });

await app.connectWith(stream, async (cx) => {
  const init = await cx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const caps = init.agentCapabilities;
  assert.deepEqual([caps.sessionCapabilities.title, caps.sessionCapabilities.archive, caps.sessionCapabilities.status], [{}, {}, {}]);
  assert.deepEqual(caps.auth, { logout: {}, status: {} });

  const s = await cx.request("session/new", { cwd: dir, mcpServers: [] });
  const done = await cx.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: "Fix the login test" }] });
  assert.equal(done.stopReason, "end_turn");
  assert.ok(done.usage.inputTokens > 0 && done.usage.totalTokens === done.usage.inputTokens + done.usage.outputTokens);
  const usage = updates.find((u) => u.sessionUpdate === "usage_update");
  assert.equal(usage.cost.currency, "USD"); // gpt-4o-mini's built-in price
  assert.ok(usage.cost.amount > 0);

  assert.deepEqual(await cx.request("session/set_title", { sessionId: s.sessionId, title: "My title" }), { title: "My title" });
  assert.deepEqual(await cx.request("session/status", { sessionId: s.sessionId }), { status: "open" });
  await cx.request("session/archive", { sessionId: s.sessionId });
  assert.deepEqual((await cx.request("session/list", {})).sessions, []);
  const all = (await cx.request("session/list", { archived: "include" })).sessions;
  assert.equal(all.length, 1);
  assert.equal(all[0].title, "My title");
  assert.equal(all[0].archived, true);
  assert.deepEqual(await cx.request("session/status", { sessionId: s.sessionId }), { status: "saved" });
  await cx.request("session/unarchive", { sessionId: s.sessionId });
  assert.equal((await cx.request("session/list", {})).sessions.length, 1);

  assert.deepEqual(await cx.request("auth/status", {}), { state: "not_required" }); // no key, and the endpoint answered
  await cx.request("logout", {});
  await assert.rejects(cx.request("session/status", { sessionId: "sess_nope" }), (e) => e.code === -32002 && e.data.sessionId === "sess_nope");
});
const titles = updates.filter((u) => u.sessionUpdate === "session_info_update").map((u) => u.title);
assert.deepEqual(titles, ["Fix the login test", "My title"]);
child.stdin.end();
console.log("ok");
