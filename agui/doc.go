// Package agui serves a team to a frontend speaking AG-UI, the
// Agent-User Interaction protocol (CopilotKit and others).
package agui
