// Package args holds the argument types of the update_planning tool. They
// live here, exported, because their names are the $defs names of the
// tool's JSON schema, which the model reads ("NewTask", "TaskUpdate",
// "Update"); package planning is their only user. A status is a string
// here; planning checks it against its Status values.
package args

// Update is the argument of update_planning: tasks to create, changes
// to existing tasks and ids of tasks to delete, processed in that order.
type Update struct {
	CreateTasks []NewTask    `json:"create_tasks,omitempty" nullable:"true" description:"Tasks to add to the plan; each id must be new."`
	UpdateTasks []TaskUpdate `json:"update_tasks,omitempty" nullable:"true" description:"Changes to existing tasks, found by id: only the fields given are changed."`
	DeleteTasks []int        `json:"delete_tasks,omitempty" nullable:"true" description:"Ids of tasks to remove from the plan."`
}

// NewTask is a task to create. Its creator is the calling agent.
type NewTask struct {
	ID           int    `json:"id" description:"Id of the new task, chosen by you; unique on the board."`
	Description  string `json:"description" description:"What is to be done, at most 300 characters."`
	Status       string `json:"status,omitempty" nullable:"true" enum:"pending,started,completed,abort" description:"Status of the task; pending when not given."`
	Owner        string `json:"owner,omitempty" nullable:"true" description:"Name of the team member who does the task; empty for unassigned."`
	Dependencies []int  `json:"dependencies,omitempty" nullable:"true" description:"Ids of the tasks this one depends on."`
	Output       string `json:"output,omitempty" nullable:"true" description:"Result of the task, at most 150 characters (longer text is cut)."`
}

// TaskUpdate changes the task with its ID: each nil field is left as it is
// (for Dependencies, nil leaves them and an empty list clears them).
type TaskUpdate struct {
	ID           int     `json:"id" description:"Id of the task to change."`
	Status       *string `json:"status,omitempty" nullable:"true" enum:"pending,started,completed,abort" description:"New status."`
	Description  *string `json:"description,omitempty" nullable:"true" description:"New description, at most 300 characters."`
	Owner        *string `json:"owner,omitempty" nullable:"true" description:"New owner (a team member's name); empty to unassign."`
	Dependencies []int   `json:"dependencies,omitempty" nullable:"true" description:"New list of the ids this task depends on."`
	Output       *string `json:"output,omitempty" nullable:"true" description:"New output, at most 150 characters (longer text is cut)."`
}
