// Package a2a connects teams to the Agent2Agent protocol (A2A), in its
// JSON-RPC binding: version 1.0, and the method names and shapes of 0.3,
// which many agents still speak.
//
// Server serves a team as an A2A agent: its agent card at
// /.well-known/agent-card.json (the team's cards are its skills) and its
// tasks over JSON-RPC (SendMessage, SendStreamingMessage, GetTask,
// CancelTask, SubscribeToTask, ListTasks; message/send, message/stream,
// tasks/get, tasks/cancel, tasks/resubscribe). A task is a request from
// the team's person to its entry member, and its states follow the team:
// working while members work on it, input-required when an agent asks the
// person (the task's next message is the answer; an approval request is
// such a question, its details in a data part, decided by the answer's
// text or a structured decision in a data part), completed when the
// entry member answers the person, canceled through the team's cancel,
// failed with the error of the turn that ended it. The work of a task is
// followed through the team's log: every message sent while a member
// handles one of the task's is the task's.
//
// A member whose card's agent_class is RemoteKind is a remote A2A agent
// (RemoteConfig: its URL): hired by role like any member, its card
// fetched and checked when it starts, each request a remote task whose
// answer comes back as a response, a remote question a request to the
// member that asked, a cancel or a stop the remote task's cancel.
//
// Access follows the studio's rule: loopback requests are served; with
// Options.Token other requests must carry it as a bearer token.
package a2a
