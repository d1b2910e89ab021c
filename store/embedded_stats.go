package store

import (
	"os"
	"time"
)

// EmbeddedStats is what the embedded store tells an operator about the
// files that keep it (read by the metrics at every scrape).
type EmbeddedStats struct {
	// Path is the snapshot file; "" when nothing is kept on disk, and then
	// every other field is zero.
	Path string
	// SnapshotWritten is when the snapshot file was last written, and
	// SnapshotBytes its size; both zero until the first one is.
	SnapshotWritten time.Time
	SnapshotBytes   int64
	// SnapshotFailures counts the snapshots that failed in a row (zero
	// after one succeeds); from two on the store is not ready.
	SnapshotFailures int64
	// SnapshotPause is how long the last snapshot held writes.
	SnapshotPause time.Duration
	// Log describes the log of changes written between snapshots; nil
	// while the store keeps none.
	Log *EmbeddedLogStats
}

// EmbeddedLogStats describes the embedded store's log of changes.
type EmbeddedLogStats struct {
	// Bytes is the log's size on disk now (a snapshot compacts it).
	Bytes int64
	// Syncs counts the log's fsyncs since start (concurrent writes share one).
	Syncs int64
}

// Stats reads the embedded store's figures now: the snapshot file's age
// and size from the file itself, so they hold across restarts.
func (e *Embedded) Stats() EmbeddedStats {
	if e.path == "" {
		return EmbeddedStats{}
	}
	s := EmbeddedStats{Path: e.path, SnapshotFailures: e.failures.Load(), SnapshotPause: time.Duration(e.lastPause.Load())}
	if fi, err := os.Stat(e.path); err == nil {
		s.SnapshotWritten, s.SnapshotBytes = fi.ModTime(), fi.Size()
	}
	return s
}
