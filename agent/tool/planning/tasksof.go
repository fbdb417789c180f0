package planning

import "encoding/json"

// TasksOf returns the tasks of a board from a state the planning tool
// published (a team's StateChangedMessage of its tool actor): the board
// itself in a running team, its JSON form in a restored or archived one.
// ok is false for a state that is not a board. An empty board gives an
// empty, non-nil list.
func TasksOf(state any) (tasks []Task, ok bool) {
	switch b := state.(type) {
	case *Board:
		if b == nil {
			return nil, false
		}
		return orEmpty(b.Tasks), true
	case Board:
		return orEmpty(b.Tasks), true
	case nil:
		return nil, false
	}
	raw, err := json.Marshal(state)
	if err != nil {
		return nil, false
	}
	var probe struct {
		Tasks *[]Task `json:"tasks"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.Tasks == nil {
		return nil, false
	}
	return orEmpty(*probe.Tasks), true
}

// orEmpty keeps an empty board distinct from no board on the wire.
func orEmpty(ts []Task) []Task {
	if ts == nil {
		return []Task{}
	}
	return ts
}
