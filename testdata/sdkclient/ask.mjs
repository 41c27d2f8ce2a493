// ask_user through elicitation/create form mode, answered by the official
// SDK client's own request handler (see lib.mjs): the SDK parses the request
// with its schema before the handler runs. In a new process the question
// replays with its answer. Run by cmd/crow-acp's TestSDKClient, which checks
// that the model read the answer.
import assert from "node:assert/strict";
import { dir, transcript, withAgent } from "./lib.mjs";

const asked = [];
let sid;
const elicit = async ({ params }) => {
  asked.push(params);
  return { action: "accept", content: { answer: "PostgreSQL" } };
};
await withAgent({ clientCapabilities: { elicitation: { form: {} } }, handlers: { "elicitation/create": elicit } }, async (cx) => {
  sid = (await cx.call("session/new", { cwd: dir, mcpServers: [] })).sessionId;
  const done = await cx.call("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "Set up storage" }] });
  assert.equal(done.stopReason, "end_turn");
  assert.equal(asked.length, 1);
  const q = asked[0];
  assert.deepEqual([q.mode, q.sessionId, q.toolCallId, q.message], ["form", sid, "call_1", "Which database?"]);
  assert.deepEqual(q.requestedSchema.properties.answer.oneOf.map((o) => o.const), ["SQLite", "PostgreSQL"]);
  assert.deepEqual(transcript(cx.updates, sid), [
    "tool call_1 other pending: Question: Which database?",
    "tool call_1 completed: Which database?\n\nAnswer: PostgreSQL",
    "agent: Using PostgreSQL.",
  ]);
});

await withAgent({}, async (cx) => {
  await cx.call("session/load", { sessionId: sid, cwd: dir, mcpServers: [] });
  assert.deepEqual(transcript(cx.updates, sid), [
    "user: Set up storage",
    "tool call_1 other pending: Question: Which database?",
    "tool call_1 completed: Which database?\n\nAnswer: PostgreSQL",
    "agent: Using PostgreSQL.",
  ]);
});
console.log("ok");
