// The prompt response's usage and usage_update.cost through the official SDK
// client (see lib.mjs), with the model's price from CROW_MODELS (1 USD in,
// 0.25 cached, 2 out per million tokens) and the usage the fake model
// reports: 200×1 + 800×0.25 + 500×2 = 1400 µUSD. Run by cmd/crow-acp's
// TestSDKClient, also with CROW_SDK_TAMPER to show that a bad frame fails.
import assert from "node:assert/strict";
import { dir, withAgent } from "./lib.mjs";

await withAgent({}, async (cx) => {
  const { sessionId } = await cx.call("session/new", { cwd: dir, mcpServers: [] });
  const done = await cx.call("session/prompt", { sessionId, prompt: [{ type: "text", text: "Hi" }] });
  assert.deepEqual(done, { stopReason: "end_turn", usage: { totalTokens: 1500, inputTokens: 1000, outputTokens: 500, cachedReadTokens: 800 } });
  const usage = cx.updates.filter((u) => u.update.sessionUpdate === "usage_update").map((u) => u.update);
  assert.deepEqual(usage.at(-1), { sessionUpdate: "usage_update", used: 1500, size: 8192, cost: { amount: 0.0014, currency: "USD" } });
});
console.log("ok");
