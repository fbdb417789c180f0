// An A2A agent built on the official JavaScript SDK's server
// (@a2a-js/sdk, JSON-RPC, 1.0 with its 0.3 compatibility on), for the Go
// test of a remote agent hired into a team. It prints "listening PORT",
// then "slow TASK" when a slow task starts and "canceled TASK" for each
// cancel it gets. What it does with a
// message's text:
//   "question ..."  asks "which city?" (input-required); the answer X
//                   completes the task with "sunny in X";
//   "slow ..."      works until the task is canceled;
//   "die ..."       exits in the middle of the task;
//   anything else   answers "echo: TEXT" in two streamed chunks, and
//                   reports its usage (12 tokens in, 5 out).
import express from "express";
import { randomUUID } from "node:crypto";
import { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } from "@a2a-js/sdk/server";
import { jsonRpcHandler, agentCardHandler, UserBuilder } from "@a2a-js/sdk/server/express";

const TaskState = { SUBMITTED: 1, WORKING: 2, COMPLETED: 3, CANCELED: 5, INPUT_REQUIRED: 6 };
const text = (parts) => (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const part = (s) => ({ content: { $case: "text", value: s }, metadata: undefined, filename: "", mediaType: "" });
const agentMsg = (s, taskId, contextId) => ({
  messageId: randomUUID(), role: 2, parts: [part(s)], taskId, contextId, metadata: undefined, extensions: [], referenceTaskIds: [],
});

const port = Number(process.argv[2] ?? 0);
const app = express();
let url = "";
const card = () => ({
  name: "Weather", description: "Answers questions about the weather.", version: "1.0.0",
  supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {}, securityRequirements: [],
  defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
  skills: [{ id: "weather", name: "weather", description: "The weather of a city.", tags: ["weather"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [], provider: undefined,
});

const working = new Map(); // taskId -> resolve (the slow tasks)
const status = (bus, taskId, contextId, state, message, metadata) =>
  bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata }));

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const said = text(ctx.userMessage.parts);
    // Every stream starts with the task: a new one, or the one continued.
    bus.publish(AgentEvent.task(ctx.task ?? { id: taskId, contextId, status: { state: TaskState.SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    status(bus, taskId, contextId, TaskState.WORKING, undefined);
    if (ctx.task) { // the answer to the question

      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: "a1", name: "answer", description: "", parts: [part("sunny in " + said)], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
      status(bus, taskId, contextId, TaskState.COMPLETED, undefined);
    } else if (said.startsWith("question")) {
      status(bus, taskId, contextId, TaskState.INPUT_REQUIRED, agentMsg("which city?", taskId, contextId));
    } else if (said.startsWith("slow")) {
      console.log("slow " + taskId);
      await new Promise((resolve) => working.set(taskId, resolve));
      return; // the cancel published the end
    } else if (said.startsWith("die")) {
      setTimeout(() => process.exit(3), 50);
      await new Promise(() => {});
    } else {
      const answer = "echo: " + said;
      const half = Math.floor(answer.length / 2);
      for (const [i, chunk] of [answer.slice(0, half), answer.slice(half)].entries()) {
        bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: "a1", name: "answer", description: "", parts: [part(chunk)], metadata: undefined, extensions: [] }, append: i > 0, lastChunk: i > 0, metadata: undefined }));
      }
      status(bus, taskId, contextId, TaskState.COMPLETED, undefined, { usage: { inputTokens: 12, outputTokens: 5 } });
    }
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    console.log("canceled " + taskId);
    const resolve = working.get(taskId);
    working.delete(taskId);
    status(bus, taskId, "", TaskState.CANCELED, undefined);
    bus.finished();
    resolve?.();
  },
};

const srv = app.listen(port, "127.0.0.1", () => {
  url = `http://127.0.0.1:${srv.address().port}/`;
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: async () => card() }));
  app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
  console.log("listening " + srv.address().port);
});
