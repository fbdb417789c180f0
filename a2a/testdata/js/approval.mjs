// Decides tool calls that wait for the person's approval through the
// official JavaScript SDK's client, over A2A 1.0 or its 0.3
// compatibility: each request makes the task input-required with the
// call's details in a data part; the first is approved with a structured
// decision (a data part), the second denied with a text answer. Prints one
// JSON line per step. Usage: node approval.mjs URL 1.0|0.3
import { randomUUID } from "node:crypto";
import { ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

const [url, version] = process.argv.slice(2);
const states = ["unspecified", "submitted", "working", "completed", "failed", "canceled", "input-required", "rejected", "auth-required"];
const out = (step, v) => console.log(JSON.stringify({ step, ...v }));

const card = await (await fetch(new URL("/.well-known/agent-card.json", url))).json();
card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === version);
const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })] });
const client = await factory.createFromAgentCard(card);

const msg = (content, taskId = "", contextId = "") => ({
  messageId: randomUUID(), role: 1, parts: [{ content }], taskId, contextId, extensions: [], referenceTaskIds: [], metadata: undefined,
});
const text = (parts) => (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const data = (parts) => (parts ?? []).filter((p) => p.content?.$case === "data").map((p) => p.content.value);
const summary = (t) => ({
  state: states[t.status?.state] ?? String(t.status?.state), status: text(t.status?.message?.parts),
  data: data(t.status?.message?.parts), answer: (t.artifacts ?? []).map((a) => text(a.parts)).join("|"),
});
const send = async (m) => {
  const r = await client.sendMessage({ message: m, configuration: undefined, tenant: "", metadata: undefined });
  if (!r.status) throw new Error("not a task: " + JSON.stringify(r));
  return r;
};

try {
  const q1 = await send(msg({ $case: "text", value: "clean up the database" }));
  out("asked", summary(q1));
  const a1 = await send(msg({ $case: "data", value: { decision: "approve", reason: "backed up" } }, q1.id, q1.contextId));
  out("approved", summary(a1));

  const q2 = await send(msg({ $case: "text", value: "clean up again" }));
  out("asked again", summary(q2));
  const a2 = await send(msg({ $case: "text", value: "deny that is the live database" }, q2.id, q2.contextId));
  out("denied", summary(a2));

  // A structured decision that is not one: the protocol's error, the task still waits.
  const q3 = await send(msg({ $case: "text", value: "and once more" }));
  try {
    await send(msg({ $case: "data", value: { decision: "maybe" } }, q3.id, q3.contextId));
    out("bad decision", { error: "" });
  } catch (err) {
    out("bad decision", { error: String(err?.message ?? err), ...summary(await client.getTask({ id: q3.id, tenant: "" })) });
  }
} catch (err) {
  out("error", { error: String(err?.stack ?? err) });
  process.exitCode = 1;
}
