// Runs a conversation with an AG-UI endpoint through the official client
// (@ag-ui/client's HttpAgent) and prints one JSON line per run for the Go
// test to check: the events' types, the assistant's text, the tool calls
// and their results, the state, the interrupts. Usage: node client.mjs URL
import { HttpAgent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";

const [url] = process.argv.slice(2);
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
    state: agent.state, interrupts: agent.pendingInterrupts.map((i) => ({ id: i.id, message: i.message })),
  });
}

try {
  agent.messages.push({ id: randomUUID(), role: "user", content: "plan the trip" });
  await run("streamed", {});
  agent.messages.push({ id: randomUUID(), role: "user", content: "ask me" });
  await run("question", {});
  const q = agent.pendingInterrupts[0];
  await run("answered", { resume: [{ interruptId: q.id, status: "resolved", payload: "blue" }] });
} catch (err) {
  out("error", { error: String(err?.stack ?? err) });
  process.exitCode = 1;
}
