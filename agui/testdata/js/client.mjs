// Runs a conversation with an AG-UI endpoint through the official client
// (@ag-ui/client's HttpAgent) and prints one JSON line per run for the Go
// test to check: the events' types, the assistant's text, the tool calls
// and their results, the state, the interrupts. Usage: node client.mjs URL
// [conversation|approval|two approvals]
import { HttpAgent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";

const [url, scenario = "conversation"] = process.argv.slice(2);
const agent = new HttpAgent({ url });
const out = (step, v) => console.log(JSON.stringify({ step, ...v }));

async function run(step, params) {
  const types = [];
  const tools = [];
  const results = [];
  let finished;
  await agent.runAgent(params, {
    onEvent: ({ event }) => {
      types.push(event.type);
      if (event.type === "TOOL_CALL_START") tools.push(event.toolCallName);
      if (event.type === "TOOL_CALL_RESULT") results.push(event.content);
      if (event.type === "RUN_FINISHED") finished = event.outcome?.type ?? "success";
      if (event.type === "RUN_ERROR") finished = "error: " + event.message;
    },
  });
  const last = agent.messages.filter((m) => m.role === "assistant").at(-1);
  out(step, {
    types: [...new Set(types)], contents: types.filter((t) => t === "TEXT_MESSAGE_CONTENT").length, finished, tools, results,
    text: typeof last?.content === "string" ? last.content : "",
    state: agent.state, interrupts: agent.pendingInterrupts,
  });
}

const say = (content) => agent.messages.push({ id: randomUUID(), role: "user", content });
const resume = (status, payload) => ({ resume: [{ interruptId: agent.pendingInterrupts[0].id, status, payload }] });

try {
  if (scenario === "conversation") {
    say("plan the trip");
    await run("streamed", {});
    say("ask me");
    await run("question", {});
    await run("answered", resume("resolved", "blue"));
  } else if (scenario === "two approvals") {
    // One answer of the model with two calls to approve: one interrupt
    // each, in one run; one resume decides both.
    say("plan two tasks");
    await run("asked", {});
    const [first, second] = agent.pendingInterrupts;
    await run("decided", { resume: [
      { interruptId: first.id, status: "resolved", payload: { approved: true } },
      { interruptId: second.id, status: "resolved", payload: { decision: "deny", reason: "one is enough" } },
    ] });
  } else {
    // Tool calls waiting for the person's approval: each an interrupt,
    // decided by a structured payload, a text, or abandoned.
    say("drop the table");
    await run("asked", {});
    await run("approved", resume("resolved", { decision: "approve", reason: "backed up" }));
    say("drop it again");
    await run("asked again", {});
    await run("denied", resume("resolved", "deny that is the live database"));
    say("and once more");
    await run("asked a third time", {});
    try {
      await run("bad decision", resume("resolved", { decision: "maybe" }));
    } catch (err) {
      out("bad decision", { error: String(err?.message ?? err) });
    }
    await run("abandoned", resume("cancelled"));
  }
} catch (err) {
  out("error", { error: String(err?.stack ?? err) });
  process.exitCode = 1;
}
