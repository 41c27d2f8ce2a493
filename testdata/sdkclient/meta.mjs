// Titles, archive, status, auth/status, logout and the prompt's usage and
// cost, through the official SDK client (see lib.mjs). Run by
// cmd/crow-acp's TestSDKClient.
import assert from "node:assert/strict";
import { dir, withAgent } from "./lib.mjs";

await withAgent({}, async (cx, init) => {
  const caps = init.agentCapabilities;
  assert.deepEqual([caps.sessionCapabilities.title, caps.sessionCapabilities.archive, caps.sessionCapabilities.status], [{}, {}, {}]);
  assert.deepEqual(caps.auth, { logout: {}, status: {} });

  const s = await cx.call("session/new", { cwd: dir, mcpServers: [] });
  const done = await cx.call("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: "Fix the login test" }] });
  assert.equal(done.stopReason, "end_turn");
  assert.ok(done.usage.inputTokens > 0 && done.usage.totalTokens === done.usage.inputTokens + done.usage.outputTokens);
  const usage = cx.updates.find((u) => u.update.sessionUpdate === "usage_update").update;
  assert.equal(usage.cost.currency, "USD"); // gpt-4o-mini's built-in price
  assert.ok(usage.cost.amount > 0);

  assert.deepEqual(await cx.call("session/set_title", { sessionId: s.sessionId, title: "My title" }), { title: "My title" });
  assert.deepEqual(await cx.call("session/status", { sessionId: s.sessionId }), { status: "open" });
  await cx.call("session/archive", { sessionId: s.sessionId });
  assert.deepEqual((await cx.call("session/list", {})).sessions, []);
  const all = (await cx.call("session/list", { archived: "include" })).sessions;
  assert.equal(all.length, 1);
  assert.equal(all[0].title, "My title");
  assert.equal(all[0].archived, true);
  assert.deepEqual(await cx.call("session/status", { sessionId: s.sessionId }), { status: "saved" });
  await cx.call("session/unarchive", { sessionId: s.sessionId });
  const listed = (await cx.call("session/list", {})).sessions;
  assert.equal(listed.length, 1);
  assert.strictEqual(listed[0].archived, false); // archive is advertised: every entry says (SDK 2.4 SessionInfo)

  assert.deepEqual(await cx.call("auth/status", {}), { state: "not_required" }); // no key, and the endpoint answered
  await cx.call("logout", {});
  await assert.rejects(cx.call("session/status", { sessionId: "sess_nope" }), (e) => e.code === -32002 && e.data.sessionId === "sess_nope");

  const titles = cx.updates.filter((u) => u.update.sessionUpdate === "session_info_update").map((u) => u.update.title);
  assert.deepEqual(titles, ["Fix the login test", "My title"]);
});
console.log("ok");
