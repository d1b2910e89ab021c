package store

import (
	"context"
	"time"
)

// MaxHistory is the most change entries (creates, changes, the delete)
// kept per record; past it the oldest go.
const MaxHistory = 1000

// MaxHistoryNotes is the most notes a record keeps; one more is refused.
const MaxHistoryNotes = 1000

// HistoryAfterDelete is how long a deleted record's history is kept.
const HistoryAfterDelete = 30 * 24 * time.Hour

// MaxNote is the longest note, in characters.
const MaxNote = 2000

// HistoryPerPage is the number of entries of one page of history.
const HistoryPerPage = 25

// The actions of history entries.
const (
	ActionCreated  = "created"
	ActionUpdated  = "updated"
	ActionDeleted  = "deleted"
	ActionRestored = "restored"
	ActionNote     = "note"
)

// UndoWindow is how long a deleted record can be brought back (Restore):
// its values are kept beside its history for that long, then they go.
const UndoWindow = 10 * time.Minute

// HistoryEntry is one entry of a record's history.
type HistoryEntry struct {
	// Cursor names the entry: a page "before" it starts after it.
	Cursor  string                 `json:"cursor"`
	Version int64                  `json:"version"`
	At      time.Time              `json:"at"`
	Actor   string                 `json:"actor"`
	Via     string                 `json:"via"`
	Action  string                 `json:"action"`
	Changes map[string]FieldChange `json:"changes,omitempty"`
	Items   *ItemChanges           `json:"items,omitempty"`
	Note    string                 `json:"note,omitempty"`
}

// FieldChange is one field's value before and after a change.
type FieldChange struct {
	From any `json:"from"`
	To   any `json:"to"`
}

// ItemChanges are an order's items added, removed and changed by a change.
type ItemChanges struct {
	Added   []Item       `json:"added,omitempty"`
	Removed []Item       `json:"removed,omitempty"`
	Changed []ItemChange `json:"changed,omitempty"`
}

// ItemChange is one item before and after a change.
type ItemChange struct {
	From Item `json:"from"`
	To   Item `json:"to"`
}

// HistoryPage is one page of a record's history, newest first; Next is
// the cursor of the page after it ("" when there is none).
type HistoryPage struct {
	Entries []HistoryEntry
	Next    string
}

type actorKey struct{}

// Actor is who changes records, and how ("web" or "api").
type Actor struct{ Name, Via string }

// WithActor returns ctx saying who changes records through it, and how:
// via "web" (the pages) or "api" (JSON). History entries carry both; a
// change without them is "anonymous" via "api".
func WithActor(ctx context.Context, name, via string) context.Context {
	return context.WithValue(ctx, actorKey{}, Actor{name, via})
}

// ActorOf is ctx's actor (WithActor), "anonymous" via "api" when unset.
func ActorOf(ctx context.Context) Actor {
	a, _ := ctx.Value(actorKey{}).(Actor)
	if a.Name == "" {
		a.Name = "anonymous"
	}
	if a.Via == "" {
		a.Via = "api"
	}
	return a
}

// PairBy pairs each of n things with one of m others: for each rule in
// turn, each thing not yet paired takes the first other not yet taken that
// the rule matches (rule(i, j): thing i and other j). It returns, for each
// thing, the other it took, or -1. The history (an item before and after a
// change) and the 409's comparison (theirs and yours) pair items by it.
func PairBy(n, m int, rules ...func(i, j int) bool) []int {
	taken := make([]bool, m)
	paired := make([]int, n)
	for i := range paired {
		paired[i] = -1
	}
	for _, rule := range rules {
		for i := range paired {
			if paired[i] >= 0 {
				continue
			}
			for j := range taken {
				if !taken[j] && rule(i, j) {
					taken[j], paired[i] = true, j
					break
				}
			}
		}
	}
	return paired
}
