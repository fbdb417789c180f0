package actor

import "testing"

// The stop phases are in the order a stop goes through them, each named.
func TestStopPhasesAreOrderedAndNamed(t *testing.T) {
	order := []stopPhase{phaseRunning, phaseStopBegun, phaseOthersTold, phaseAllTold, phaseFinishing, phaseStopped}
	names := []string{"running", "stop begun", "others told", "all told", "finishing", "stopped"}
	for i, p := range order {
		if i > 0 && p <= order[i-1] {
			t.Errorf("%v is not after %v", p, order[i-1])
		}
		if p.String() != names[i] {
			t.Errorf("phase %d is named %q, want %q", p, p.String(), names[i])
		}
	}
	if got := stopPhase(9).String(); got != "stopPhase(9)" {
		t.Errorf("an unknown phase is named %q", got)
	}
}
