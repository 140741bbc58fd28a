package guard

import (
	"sync"

	"github.com/mcpcage/mcpcage/internal/scan"
)

// tally is one session's count of the scanner's findings in each tools/call
// result, by the response's id: the scanner writes it as it scans, the audit
// policy takes it for the call's record, so a result is scanned once and a
// withheld result's record keeps the count of what was withheld.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func newTally() *tally { return &tally{n: map[string]int{}} }

func (t *tally) put(id string, n int) {
	t.mu.Lock()
	t.n[id] = n
	t.mu.Unlock()
}

// findings takes the count for id; an answer the scanner never saw (another
// policy dropped it first) is scanned here.
func (t *tally) findings(id string, result []byte) int {
	t.mu.Lock()
	n, ok := t.n[id]
	delete(t.n, id)
	t.mu.Unlock()
	if ok {
		return n
	}
	return len(scan.Result(result))
}
