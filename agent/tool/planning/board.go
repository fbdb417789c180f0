package planning

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent/internal/cards"
	"github.com/akgentic/akgentic-go/agent/llm"
	"github.com/akgentic/akgentic-go/agent/tool/planning/internal/args"
	"github.com/akgentic/akgentic-go/message"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/proxy"
)

// Status is the state of a task.
type Status string

// The statuses of a task.
const (
	Pending   Status = "pending"
	Started   Status = "started"
	Completed Status = "completed"
	Abort     Status = "abort"
)

// statuses lists the valid statuses, in the order error messages name them.
var statuses = []Status{Pending, Started, Completed, Abort}

func (s Status) valid() bool { return slices.Contains(statuses, s) }

func statusList() string {
	names := make([]string, len(statuses))
	for i, s := range statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Limits of the task texts, documented on Task.
const (
	// maxDescription is the longest description, in characters; a longer
	// one is refused.
	maxDescription = 300
	// maxOutput is the longest output, in characters; a longer one is cut
	// to maxOutput-3 characters followed by "...".
	maxOutput = 150
)

// Task is one task of the team's plan.
type Task struct {
	// ID is chosen by the model that creates the task; unique on the board.
	ID     int    `json:"id"`
	Status Status `json:"status"`
	// Description says what is to be done: at most 300 characters (a
	// longer one is refused).
	Description string `json:"description"`
	// Owner is the name of the member who does it; empty = unassigned.
	Owner string `json:"owner"`
	// Dependencies are the ids of the tasks this one waits for.
	Dependencies []int `json:"dependencies"`
	// Output is the task's result: at most 150 characters (a longer one
	// is cut to 147 characters followed by "...").
	Output string `json:"output"`
	// Creator is the name of the agent that created the task.
	Creator string `json:"creator"`
	// UpdatedAt is when the task was created or last changed.
	UpdatedAt time.Time `json:"updated_at"`
}

func (t Task) clone() Task {
	t.Dependencies = deps(t.Dependencies)
	return t
}

// deps copies a list of dependencies; never nil, so it encodes as [].
func deps(ids []int) []int { return append([]int{}, ids...) }

// line is the one-line form of a task used by search_planning and
// planning_summary.
func (t Task) line() string {
	owner := t.Owner
	if owner == "" {
		owner = "unassigned"
	}
	return fmt.Sprintf("Task %d: %s [%s] (Owner: %s, Creator: %s)", t.ID, t.Description, t.Status, owner, t.Creator)
}

// Board is the team's plan: the state of the "#PlanningTool" actor, published
// to the orchestrator on every change so that a restored team gets it back.
type Board struct {
	// Tasks are kept in id order.
	Tasks []Task `json:"tasks"`
}

func (b *Board) index(id int) (int, bool) {
	return slices.BinarySearchFunc(b.Tasks, id, func(t Task, id int) int { return cmp.Compare(t.ID, id) })
}

func (b *Board) task(id int) (Task, bool) {
	if i, ok := b.index(id); ok {
		return b.Tasks[i].clone(), true
	}
	return Task{}, false
}

// checkStatus and checkDescription name the offending field.
func checkStatus(s Status) error {
	if !s.valid() {
		return fmt.Errorf("status %q is not one of %s", s, statusList())
	}
	return nil
}

func checkDescription(d string) error {
	switch n := utf8.RuneCountInString(d); {
	case strings.TrimSpace(d) == "":
		return errors.New("description is empty")
	case n > maxDescription:
		return fmt.Errorf("description has %d characters, at most %d are allowed", n, maxDescription)
	}
	return nil
}

// cutOutput truncates an output longer than maxOutput.
func cutOutput(s string) string {
	if utf8.RuneCountInString(s) <= maxOutput {
		return s
	}
	r := []rune(s)
	return string(r[:maxOutput-3]) + "..."
}

// apply runs one update: creations, then changes, then deletions.
// A faulty item is skipped with an error naming it; the others are applied.
// It reports whether the board changed.
func (b *Board) apply(u args.Update, creator string, now time.Time) (changed bool, errs []string) {
	for _, n := range u.CreateTasks {
		status := cmp.Or(Status(n.Status), Pending)
		err := errors.Join(checkStatus(status), checkDescription(n.Description))
		i, exists := b.index(n.ID)
		if exists {
			err = fmt.Errorf("id %d is already used by another task", n.ID)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("create_tasks: task %d: %s", n.ID, oneLine(err)))
			continue
		}
		b.Tasks = slices.Insert(b.Tasks, i, Task{
			ID: n.ID, Status: status, Description: n.Description, Owner: strings.TrimSpace(n.Owner),
			Dependencies: deps(n.Dependencies), Output: cutOutput(n.Output), Creator: creator, UpdatedAt: now,
		})
		changed = true
	}
	for _, c := range u.UpdateTasks {
		i, ok := b.index(c.ID)
		if !ok {
			errs = append(errs, fmt.Sprintf("update_tasks: no task with id %d", c.ID))
			continue
		}
		var err error
		if c.Status != nil {
			err = checkStatus(Status(*c.Status))
		}
		if c.Description != nil {
			err = errors.Join(err, checkDescription(*c.Description))
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("update_tasks: task %d: %s", c.ID, oneLine(err)))
			continue
		}
		t := &b.Tasks[i]
		if c.Status != nil {
			t.Status = Status(*c.Status)
		}
		if c.Description != nil {
			t.Description = *c.Description
		}
		if c.Owner != nil {
			t.Owner = strings.TrimSpace(*c.Owner)
		}
		if c.Dependencies != nil {
			t.Dependencies = deps(c.Dependencies)
		}
		if c.Output != nil {
			t.Output = cutOutput(*c.Output)
		}
		t.UpdatedAt, changed = now, true
	}
	for _, id := range u.DeleteTasks {
		i, ok := b.index(id)
		if !ok {
			errs = append(errs, fmt.Sprintf("delete_tasks: no task with id %d", id))
			continue
		}
		b.Tasks, changed = slices.Delete(b.Tasks, i, i+1), true
	}
	return changed, errs
}

// oneLine joins the lines of an errors.Join.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", ", ") }

// query is a search_planning request (keyword mode).
type query struct {
	text     string
	status   Status // "" = any
	owner    string
	hasOwner bool // owner "" then selects unassigned tasks
	creator  string
	topK     int // 0 = no limit
}

type hit struct {
	task  Task
	score int
}

// search filters the tasks: with a query, a task matches when its
// description contains the query, case-insensitively, and is scored by the
// number of occurrences; the filters are ANDed; results are ordered by score
// (then id) when there is a query, else by id.
func (b *Board) search(q query) []hit {
	needle := strings.ToLower(q.text)
	var out []hit
	for _, t := range b.Tasks {
		score := 0
		if needle != "" {
			if score = strings.Count(strings.ToLower(t.Description), needle); score == 0 {
				continue
			}
		}
		if (q.status != "" && t.Status != q.status) || (q.hasOwner && t.Owner != q.owner) ||
			(q.creator != "" && t.Creator != q.creator) {
			continue
		}
		out = append(out, hit{task: t.clone(), score: score})
	}
	if needle != "" {
		slices.SortStableFunc(out, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	}
	if q.topK > 0 && len(out) > q.topK {
		out = out[:q.topK]
	}
	return out
}

// Texts of the capabilities.
const (
	noPlanning   = "No current team planning."
	noTask       = "No task with that ID."
	noMatch      = "No matching tasks."
	unassigned   = "unassigned"
	keywordMatch = " (keyword match)"
)

func renderHits(hits []hit, scored bool) string {
	if len(hits) == 0 {
		return noMatch
	}
	lines := make([]string, len(hits))
	for i, h := range hits {
		lines[i] = h.task.line()
		if scored {
			lines[i] += keywordMatch
		}
	}
	return strings.Join(lines, "\n")
}

// summary is the planning_summary text for agent: the task count, the
// tasks per owner, then the agent's tasks (those it owns, or created and
// assigned) or all tasks, and hint.
func (b *Board) summary(agent string, filterByAgent bool, hint string) string {
	if len(b.Tasks) == 0 {
		return noPlanning
	}
	var sb strings.Builder
	noun := "tasks"
	if len(b.Tasks) == 1 {
		noun = "task"
	}
	fmt.Fprintf(&sb, "Team planning: %d %s.\nTasks per owner:\n", len(b.Tasks), noun)
	perOwner := map[string]int{}
	free := 0
	for _, t := range b.Tasks {
		if t.Owner == "" {
			free++
		} else {
			perOwner[t.Owner]++
		}
	}
	owners := make([]string, 0, len(perOwner))
	for o := range perOwner {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	for _, o := range owners {
		fmt.Fprintf(&sb, "- %s: %d\n", o, perOwner[o])
	}
	if free > 0 {
		fmt.Fprintf(&sb, "- %s: %d\n", unassigned, free)
	}
	shown := b.Tasks
	if filterByAgent {
		shown = nil
		for _, t := range b.Tasks {
			if t.Owner == agent || (t.Creator == agent && t.Owner != "") {
				shown = append(shown, t)
			}
		}
		if len(shown) == 0 {
			sb.WriteString("No tasks owned by you, or created by you and assigned.\n")
		} else {
			sb.WriteString("Your tasks (owned by you, or created by you and assigned):\n")
		}
	} else {
		sb.WriteString("All tasks:\n")
	}
	for _, t := range shown {
		sb.WriteString("- " + t.line())
		if t.Output != "" {
			sb.WriteString(" Output: " + t.Output)
		}
		sb.WriteByte('\n')
	}
	sb.WriteString(hint)
	return strings.TrimSuffix(sb.String(), "\n")
}

// boardActor is the "#PlanningTool" actor: it holds the team's Board and
// runs every operation on it, reached through proxy calls. It never calls
// an agent, so an agent waiting on it cannot deadlock.
type boardActor struct {
	actor.Agent[actor.Config, Board]
}

// now is the clock of UpdatedAt.
var now = func() time.Time { return time.Now().UTC() }

// OnStart installs an empty board, or the last one published when the team
// is restored, and publishes it.
func (b *boardActor) OnStart(c *actor.Context) error {
	st := &Board{}
	if c.Restoring() {
		ctx, cancel := context.WithTimeout(context.Background(), cards.QueryTimeout)
		defer cancel()
		s, ok, err := orchestrator.RestoredState[Board](ctx, c)
		if err != nil {
			return fmt.Errorf("planning: restore the board: %w", err)
		}
		if ok {
			st = s
			slices.SortStableFunc(st.Tasks, func(a, b Task) int { return cmp.Compare(a.ID, b.ID) })
		}
	}
	if err := b.InitState(st); err != nil {
		return err
	}
	return b.ObserveState()
}

// Receive handles no message: the board is reached by proxy calls.
func (*boardActor) Receive(*actor.Context, any) (any, error) { return nil, actor.ErrUnhandled }

var errNoBoard = errors.New("planning: the board did not start")

// onBoard runs fn on the board actor's goroutine.
func onBoard[R any](ctx context.Context, addr *message.Address, fn func(a *boardActor, b *Board) (R, error)) (R, error) {
	r, err := proxy.Ask(ctx, addr, func(_ *actor.Context, a *boardActor) (R, error) {
		if a.State() == nil {
			var zero R
			return zero, errNoBoard
		}
		return fn(a, a.State())
	})
	if err != nil {
		var retry *llm.RetryError
		if !errors.As(err, &retry) {
			err = fmt.Errorf("planning: team planning: %w", err)
		}
	}
	return r, err
}
