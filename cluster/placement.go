package cluster

import (
	"time"

	"github.com/google/uuid"
)

// fairShare returns, by template of this worker's, the teams to take
// over and how many of them this worker may take (see Worker).
func (w *Worker) fairShare(teams []teamLease, workers []presence, now time.Time) (map[string][]teamLease, map[string]int) {
	serving := map[string]map[string]bool{} // template: the live workers serving it
	for name := range w.tmpls {
		serving[name] = map[string]bool{w.cfg.Owner: true}
	}
	alive := map[string]bool{w.cfg.Owner: true}
	for _, p := range workers {
		if !p.Until.After(now) {
			continue // dead, or closed without removing its presence
		}
		alive[p.Owner] = true
		for _, name := range p.Templates {
			if serving[name] != nil {
				serving[name][p.Owner] = true
			}
		}
	}
	live, mine := map[string]int{}, map[string]int{}
	todo := map[string][]teamLease{}
	w.mu.Lock()
	waiting := map[uuid.UUID]bool{} // failed here lately (take): left to others, or for later
	for id, b := range w.backoff {
		waiting[id] = now.Before(b.until)
		if now.After(b.until.Add(maxBackoff)) { // resumed elsewhere long ago, or stopped
			delete(w.backoff, id)
		}
	}
	w.mu.Unlock()
	for _, x := range teams {
		ended := !x.Until.After(now)
		switch {
		case x.Stopped || serving[x.Template] == nil: // a team of another template is left to a worker that has it
		case ended && waiting[x.id]:
		case x.Owner == w.cfg.Owner && ended && w.team(x.id) == nil: // this worker's, not run here
			todo[x.Template] = append(todo[x.Template], x)
		case !ended || x.Owner == w.cfg.Owner || alive[x.Owner] && now.Before(x.Until.Add(w.cfg.Lease)):
			live[x.Template]++ // renewed, or its live owner's renewal lags
			if x.Owner == w.cfg.Owner {
				mine[x.Template]++
			}
		default:
			todo[x.Template] = append(todo[x.Template], x)
		}
	}
	share := map[string]int{}
	for name, xs := range todo {
		n := len(serving[name])
		share[name] = (live[name]+len(xs)+n-1)/n - mine[name]
	}
	return todo, share
}
