package store

import "time"

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
