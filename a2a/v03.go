package a2a

import "strings"

// A2A 0.3, which many agents still speak: the same model in other shapes.
// Its methods have slash names (message/send), its objects carry a "kind"
// (message, task, status-update, artifact-update), its enums are lower
// case with hyphens (input-required, user), its parts say their kind, a
// stream's last status update says final, and a result is the object
// itself rather than a one-field wrapper. The server reads both shapes
// (part and wireMessage hold the fields of both) and answers in the
// shape of the method's name; these functions turn the 1.0 shapes it
// keeps into the 0.3 ones.

// state03 is a 1.0 task state in 0.3's words ("TASK_STATE_INPUT_REQUIRED"
// is "input-required").
func state03(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s, "TASK_STATE_")), "_", "-")
}

// state10 is a task state of either version in 1.0's words.
func state10(s string) string {
	if s == "" || strings.HasPrefix(s, "TASK_STATE_") {
		return s
	}
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

// role03 is a 1.0 role in 0.3's words.
func role03(r string) string { return strings.ToLower(strings.TrimPrefix(r, "ROLE_")) }

// role10 is a role of either version in 1.0's words.
func role10(r string) string {
	if r == "" || strings.HasPrefix(r, "ROLE_") {
		return r
	}
	return "ROLE_" + strings.ToUpper(r)
}

// parts03 writes parts in 0.3's shape.
func parts03(ps []part) []part {
	out := make([]part, len(ps))
	for i, p := range ps {
		switch {
		case p.Text != nil:
			p.Kind = "text"
		case len(p.Data) > 0:
			p.Kind = "data"
		}
		out[i] = p
	}
	return out
}

// message03 writes a message in 0.3's shape.
func message03(m *wireMessage) *wireMessage {
	if m == nil {
		return nil
	}
	c := *m
	c.Kind, c.Role, c.Parts = "message", role03(m.Role), parts03(m.Parts)
	return &c
}

// status03 writes a task status in 0.3's shape.
func status03(s taskStatus) taskStatus {
	s.State, s.Message = state03(s.State), message03(s.Message)
	return s
}

// task03 writes a task in 0.3's shape.
func task03(t *wireTask) *wireTask {
	c := *t
	c.Kind, c.Status = "task", status03(t.Status)
	c.History = make([]wireMessage, len(t.History))
	for i := range t.History {
		c.History[i] = *message03(&t.History[i])
	}
	c.Artifacts = artifacts03(t.Artifacts)
	return &c
}

func artifacts03(as []artifact) []artifact {
	out := make([]artifact, len(as))
	for i, a := range as {
		a.Parts = parts03(a.Parts)
		out[i] = a
	}
	return out
}

// event03 writes one stream event in 0.3's shape: the object itself.
func event03(e streamResponse) any {
	switch {
	case e.Task != nil:
		return task03(e.Task)
	case e.Message != nil:
		return message03(e.Message)
	case e.StatusUpdate != nil:
		c := *e.StatusUpdate
		final := terminal(c.Status.State) || interrupted(c.Status.State)
		c.Kind, c.Final, c.Status = "status-update", &final, status03(c.Status)
		return &c
	case e.ArtifactUpdate != nil:
		c := *e.ArtifactUpdate
		c.Kind = "artifact-update"
		c.Artifact.Parts = parts03(c.Artifact.Parts)
		return &c
	}
	return nil
}

// read10 turns a message a client sent, in either shape, into 1.0's.
func read10(m *wireMessage) {
	m.Kind, m.Role = "", role10(m.Role)
	for i := range m.Parts {
		m.Parts[i].Kind = ""
	}
}
