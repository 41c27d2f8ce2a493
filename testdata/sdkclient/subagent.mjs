// A subagent through the official SDK client (see lib.mjs): the client
// advertises subagents, the parent's model hands a task to a child session,
// and the client sees the subagent_update that announces the child, the
// child's own updates, the child's end, and the parent's answer. In a new
// process the parent replays the subagent_update and the child loads on its
// own. Run by cmd/crow-acp's TestSDKClient, which scripts the model.
import assert from "node:assert/strict";
import { dir, transcript, withAgent } from "./lib.mjs";

const cwd = `${dir}/proj`;
const caps = { clientCapabilities: { subagents: {} } };
const task = "Find where the greeting is defined and report the file and line.";
const read = "```\npackage greet\n\nconst Greeting = \"Hello\"\n```";
let parent, child;
await withAgent(caps, async (cx) => {
  parent = (await cx.call("session/new", { cwd, mcpServers: [] })).sessionId;
  const done = await cx.call("session/prompt", { sessionId: parent, prompt: [{ type: "text", text: "Where is the greeting defined?" }] });
  assert.equal(done.stopReason, "end_turn");
  const started = cx.updates.find((u) => u.update.sessionUpdate === "subagent_update").update;
  child = started.sessionId;
  assert.notEqual(child, parent);
  assert.deepEqual([started.title, started.description, started.state, started._meta], [
    "Find the greeting", task, { state: "running" }, { "crow/parentToolCallId": "call_1" }]);
  assert.deepEqual(transcript(cx.updates, parent), [
    "tool call_1 think pending: Subagent: Find the greeting",
    `subagent ${child} running`,
    `subagent ${child} idle end_turn`,
    "tool call_1 completed: The greeting is defined in greet.go, line 3.",
    "agent: It is in greet.go, line 3.",
  ]);
  const childLog = [
    `user: ${task}`,
    "tool call_c1 read pending: Read greet.go",
    `tool call_c1 completed: ${read}`,
    "agent: The greeting is defined in greet.go, line 3.",
  ];
  assert.deepEqual(transcript(cx.updates, child), childLog);
  // The child's updates come between the two subagent_updates.
  const order = cx.updates.map((u) => u.sessionId === child ? "child" : u.update.sessionUpdate).filter((k) => k === "child" || k === "subagent_update");
  assert.equal(order.join(" ").replace(/( child)+/, " child…"), "subagent_update child… subagent_update");

  assert.deepEqual((await cx.call("session/list", {})).sessions.map((s) => s.sessionId), [parent]);
});

await withAgent(caps, async (cx) => {
  await cx.call("session/load", { sessionId: parent, cwd, mcpServers: [] });
  assert.deepEqual(transcript(cx.updates, parent), [
    "user: Where is the greeting defined?",
    "tool call_1 think pending: Subagent: Find the greeting",
    `subagent ${child} idle end_turn`,
    "tool call_1 completed: The greeting is defined in greet.go, line 3.",
    "agent: It is in greet.go, line 3.",
  ]);
  const n = cx.updates.length;
  await cx.call("session/load", { sessionId: child, cwd, mcpServers: [] });
  assert.deepEqual(transcript(cx.updates.slice(n), child), [
    `user: ${task}`,
    "tool call_c1 read pending: Read greet.go",
    `tool call_c1 completed: ${read}`,
    "agent: The greeting is defined in greet.go, line 3.",
  ]);
});
console.log("ok");
