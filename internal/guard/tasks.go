package guard

import (
	"sync"

	"github.com/go-json-experiment/json"
)

// tasks maps the tasks a server made of tools/call requests (protocol
// 2025-11-25: a call answered with a task, its result fetched later with
// tasks/result) to the call that started each, so that a task's result is
// scanned, withheld and recorded as the tool result it is. At most maxTasks
// are kept, the oldest forgotten first; a task's result whose call is
// forgotten is still scanned and recorded, without the call's number.
type tasks struct {
	mu    sync.Mutex
	calls map[string]taskCall
	order []string
}

const maxTasks = 4096

type taskCall struct {
	tool string
	n    int    // the call's number in the session
	args string // the call's argument fingerprint
}

func newTasks() *tasks { return &tasks{calls: map[string]taskCall{}} }

// started notes the task a tools/call result names, if it names one.
func (t *tasks) started(result []byte, c taskCall) {
	var r struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal(result, &r, json.RejectUnknownMembers(false)) != nil || r.Task.TaskID == "" || len(r.Task.TaskID) > 1024 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.calls[r.Task.TaskID]; !ok {
		t.order = append(t.order, r.Task.TaskID)
	}
	t.calls[r.Task.TaskID] = c
	if len(t.order) > maxTasks {
		delete(t.calls, t.order[0])
		t.order = t.order[1:]
	}
}

func (t *tasks) get(id string) (taskCall, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.calls[id]
	return c, ok
}

func (t *tasks) tool(id string) (string, bool) {
	c, ok := t.get(id)
	return c.tool, ok
}
