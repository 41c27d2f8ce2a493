// session/fork through the official SDK client (see lib.mjs): a session with
// a turn is forked, the fork and the source each take a turn of their own,
// and in a new process each loads and replays its own history only.
// Run by cmd/crow-acp's TestSDKClient, which checks the model requests.
import assert from "node:assert/strict";
import { dir, transcript, withAgent } from "./lib.mjs";

const text = (t) => [{ type: "text", text: t }];
let source, fork;
await withAgent({}, async (cx, init) => {
  assert.deepEqual(init.agentCapabilities.sessionCapabilities.fork, {});
  source = (await cx.call("session/new", { cwd: dir, mcpServers: [] })).sessionId;
  await cx.call("session/prompt", { sessionId: source, prompt: text("Remember the word kiwi.") });

  const f = await cx.call("session/fork", { sessionId: source, cwd: dir, mcpServers: [] });
  fork = f.sessionId;
  assert.notEqual(fork, source);
  assert.equal(f.modes.currentModeId, "default");
  const done = await cx.call("session/prompt", { sessionId: fork, prompt: text("What was the word?") });
  assert.equal(done.stopReason, "end_turn");
  assert.deepEqual(transcript(cx.updates, fork), ["agent: The word was kiwi."]); // a prompt is not echoed
  await cx.call("session/prompt", { sessionId: source, prompt: text("Now something else.") });

  const listed = (await cx.call("session/list", {})).sessions.map((s) => s.sessionId).sort();
  assert.deepEqual(listed, [source, fork].sort());
});

await withAgent({}, async (cx) => {
  await cx.call("session/load", { sessionId: fork, cwd: dir, mcpServers: [] });
  assert.deepEqual(transcript(cx.updates, fork), [
    "user: Remember the word kiwi.",
    "agent: Noted: kiwi.",
    "user: What was the word?",
    "agent: The word was kiwi.",
  ]);
  const n = cx.updates.length;
  await cx.call("session/load", { sessionId: source, cwd: dir, mcpServers: [] });
  assert.deepEqual(transcript(cx.updates.slice(n), source), [
    "user: Remember the word kiwi.",
    "agent: Noted: kiwi.",
    "user: Now something else.",
    "agent: The source goes on.",
  ]);
});
console.log("ok");
