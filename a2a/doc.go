// Package a2a connects teams to the Agent2Agent protocol (A2A): a team
// served as an A2A agent (Server), and a remote A2A agent as a member of a
// team.
package a2a
