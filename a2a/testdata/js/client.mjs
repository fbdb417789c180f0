// Drives an A2A server with the official JavaScript SDK's client, over
// A2A 1.0 or its 0.3 compatibility, and prints one JSON line per step for
// the Go test to check. The conversation scenario sends, streams, reads,
// answers a question and cancels; the approval one decides tool calls
// waiting for the person's approval: each request makes the task
// input-required with the call's details in a data part; the first is
// approved with a structured decision (a data part), the second denied
// with a text answer. Usage: node client.mjs URL 1.0|0.3
// [conversation|approval]
import { randomUUID } from "node:crypto";
import { ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

const [url, version, scenario = "conversation"] = process.argv.slice(2);
const states = ["unspecified", "submitted", "working", "completed", "failed", "canceled", "input-required", "rejected", "auth-required"];
const out = (step, v) => console.log(JSON.stringify({ step, ...v }));

const card = await (await fetch(new URL("/.well-known/agent-card.json", url))).json();
// Keep only the interface of the version under test, so the factory
// picks its transport (the 0.3 one through the SDK's compatibility layer).
card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === version);
const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })] });
const client = await factory.createFromAgentCard(card);

const part = (content, taskId = "", contextId = "") => ({
  messageId: randomUUID(), role: 1, parts: [{ content }], taskId, contextId, extensions: [], referenceTaskIds: [], metadata: undefined,
});
const msg = (text, taskId = "", contextId = "") => part({ $case: "text", value: text }, taskId, contextId);
const data = (parts) => (parts ?? []).filter((p) => p.content?.$case === "data").map((p) => p.content.value);
const text = (parts) => (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const summary = (t) => ({
  id: t.id, state: states[t.status?.state] ?? String(t.status?.state),
  status: text(t.status?.message?.parts), data: data(t.status?.message?.parts), answer: (t.artifacts ?? []).map((a) => text(a.parts)).join("|"),
  history: (t.history ?? []).length,
});
const send = async (m, configuration) => {
  const r = await client.sendMessage({ message: m, configuration, tenant: "", metadata: undefined });
  if (!r.status) throw new Error("not a task: " + JSON.stringify(r));
  return r;
};

try {
  if (scenario === "approval") {
    const q1 = await send(msg("clean up the database"));
    out("asked", summary(q1));
    const a1 = await send(part({ $case: "data", value: { decision: "approve", reason: "backed up" } }, q1.id, q1.contextId));
    out("approved", summary(a1));

    // Streamed: the stream ends with the status update asking for the approval.
    let q2, last;
    for await (const e of client.sendMessageStream({ message: msg("clean up again"), tenant: "", configuration: undefined, metadata: undefined })) {
      const p = e.payload ?? { $case: e.kind, value: e };
      if (p.$case === "task") q2 = p.value;
      if (p.$case === "statusUpdate") last = p.value;
    }
    out("asked again", { ...summary({ ...q2, status: last?.status }), streamed: true });
    const a2 = await send(msg("deny that is the live database", q2.id, q2.contextId));
    out("denied", summary(a2));

    // A structured decision that is not one: the protocol's error, the task still waits.
    const q3 = await send(msg("and once more"));
    try {
      await send(part({ $case: "data", value: { decision: "maybe" } }, q3.id, q3.contextId));
      out("bad decision", { error: "" });
    } catch (err) {
      out("bad decision", { error: String(err?.message ?? err), ...summary(await client.getTask({ id: q3.id, tenant: "" })) });
    }
  } else {
    // send: a request, answered.
    const t1 = await send(msg("hello"));
    out("send", summary(t1));

    // stream: the task, its status updates, the answer's chunks.
    const events = [];
    let streamed = "";
    for await (const e of client.sendMessageStream({ message: msg("stream please"), tenant: "", configuration: undefined, metadata: undefined })) {
      // The v1.0 client yields StreamResponse ({payload: {$case, value}}).
      const p = e.payload ?? { $case: e.kind, value: e };
      if (p.$case === "task") events.push("task:" + states[p.value.status.state]);
      if (p.$case === "statusUpdate") events.push("status:" + states[p.value.status.state]);
      if (p.$case === "artifactUpdate") {
        events.push("artifact");
        const t = text(p.value.artifact.parts);
        streamed = p.value.append ? streamed + t : t;
      }
    }
    out("stream", { events, streamed });

    // get: the first task again.
    out("get", summary(await client.getTask({ id: t1.id, tenant: "" })));

    // input-required: the team asks the person; the answer is the task's next message.
    const q = await send(msg("ask me"));
    out("question", summary(q));
    const a = await send(msg("blue", q.id, q.contextId));
    out("answered", summary(a));

    // cancel: a task that would work forever.
    const c = await send(msg("wait forever"), { returnImmediately: true, blocking: false, acceptedOutputModes: [], historyLength: undefined, taskPushNotificationConfig: undefined });
    out("started", summary(c));
    out("cancel", summary(await client.cancelTask({ id: c.id, tenant: "", metadata: undefined })));
    out("canceled", summary(await client.getTask({ id: c.id, tenant: "" })));

    // an unknown task: the protocol's error.
    try {
      await client.getTask({ id: "no-such-task", tenant: "" });
      out("unknown", { error: "" });
    } catch (err) {
      out("unknown", { error: String(err?.message ?? err) });
    }
  }
} catch (err) {
  out("error", { error: String(err?.stack ?? err) });
  process.exitCode = 1;
}
