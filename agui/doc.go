// Package agui serves a team to a frontend speaking AG-UI, the
// Agent-User Interaction protocol (CopilotKit and others): Handler takes
// runs (a RunAgentInput POSTed to it) and answers each with its events as
// Server-Sent Events.
//
// A run is the frontend's last user message, sent as the team's person to
// the entry member, or the answer to the question a resume names. Its
// events: RUN_STARTED; a STATE_SNAPSHOT of the roster and the planning
// board, then STATE_DELTAs (JSON Patch) as they change; the entry member's
// answer streamed as a text message (TEXT_MESSAGE_START, _CONTENT, _END),
// and every other message to the person as one; the tool calls of the
// run's members (TOOL_CALL_START, _ARGS, _END, then _RESULT); and
// RUN_FINISHED: success when the entry member answers the person, an
// interrupt when an agent asks the person (an approval request too, with
// its tool call and details: the resume's payload, a text or a structured
// decision, decides it), cancelled for a cancel; or RUN_ERROR with
// the error of the turn that failed. A run follows the team's log: every
// message sent while a member handles one of the run's is the run's.
//
// Access follows the studio's rule: loopback requests are served; with
// Options.Token other requests must carry it as a bearer token.
package agui
