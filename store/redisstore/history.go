package redisstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// History: every successful create, change and delete of a
// record appends one entry, in the same transaction as the change (the
// write path, write.go), and a note appends one without changing the
// record. The entries of a record are one sorted set beside its hash, with
// the same hash tag (<record key>:h: o:{42}:h, p:{p}:7:h), so the append
// is part of the record's transaction on a Cluster too. The score is the
// entry's sequence number (1, 2, ...: the cursor), the member the number,
// zero-padded, then the entry as JSON. Notes are a second sorted set of the
// same shape (<record key>:n), numbered in the same sequence: the two are
// capped apart, so no number of notes pushes out who changed what. At most
// MaxHistory changes and MaxHistoryNotes notes are kept; a deleted record's
// history lives HistoryAfterDelete more.

// historyKey is the change entries of the record at key.
func historyKey(recordKey string) string { return recordKey + ":h" }

// notesKey is the notes of the record at key. A history written before
// notes were kept apart has its notes among the changes; they read the
// same.
func notesKey(recordKey string) string { return recordKey + ":n" }

// historyTail is what appending to a record's history needs, read under a
// WATCH of both of its sets: the newest change and the newest note (the
// next entry's number follows both) and how many entries the set the new
// one goes into holds.
type historyTail struct {
	lastChange, lastNote *redis.ZSliceCmd
	count                *redis.IntCmd
}

// readTail queues the reads of historyTail for the record at key; note
// says which set the next entry goes into.
func readTail(ctx context.Context, p redis.Pipeliner, key string, note bool) historyTail {
	set := historyKey(key)
	if note {
		set = notesKey(key)
	}
	return historyTail{lastChange: p.ZRevRangeWithScores(ctx, historyKey(key), 0, 0),
		lastNote: p.ZRevRangeWithScores(ctx, notesKey(key), 0, 0), count: p.ZCard(ctx, set)}
}

// next is the number after the newest entry, change or note.
func (t historyTail) next() int64 {
	n := int64(0)
	for _, last := range []*redis.ZSliceCmd{t.lastChange, t.lastNote} {
		if zs := last.Val(); len(zs) > 0 {
			n = max(n, int64(zs[0].Score))
		}
	}
	return n + 1
}

// decodeEntry reads a history member: its number, then its JSON.
func decodeEntry(member string) (store.HistoryEntry, bool) {
	var e store.HistoryEntry
	if len(member) < 12 || json.Unmarshal([]byte(member[12:]), &e) != nil {
		return e, false
	}
	return e, true
}

// queueHistory queues, in a transaction, the append of e as the next
// entry of the history of the record at key (t read under WATCH): a note
// to its notes, anything else to its changes, of which the newest
// MaxHistory are kept. The history of a deleted record expires after
// HistoryAfterDelete, a live one's never. It returns the entry's number.
func queueHistory(ctx context.Context, p redis.Pipeliner, key string, t historyTail, e *store.HistoryEntry) int64 {
	seq := t.next()
	b, _ := json.Marshal(e)
	hk, nk := historyKey(key), notesKey(key)
	set := hk
	if e.Action == store.ActionNote {
		set = nk
	}
	p.ZAdd(ctx, set, redis.Z{Score: float64(seq), Member: fmt.Sprintf("%012d", seq) + string(b)})
	if n := t.count.Val(); set == hk && n >= store.MaxHistory {
		// Only when there are too many (miniredis sorts the whole set
		// for a range by rank).
		p.ZRemRangeByRank(ctx, hk, 0, n-store.MaxHistory)
	}
	for _, k := range []string{hk, nk} {
		if e.Action == store.ActionDeleted {
			p.PExpire(ctx, k, store.HistoryAfterDelete)
		} else {
			p.Persist(ctx, k)
		}
	}
	return seq
}

// changeEntry is the history entry of a write from before to after (nil
// for a create or a delete), at the time given, by ctx's actor.
func changeEntry[T any](ctx context.Context, k *kind[T], before, after *T, at time.Time) *store.HistoryEntry {
	a := store.ActorOf(ctx)
	e := &store.HistoryEntry{At: at.UTC().Truncate(time.Second), Actor: a.Name, Via: a.Via}
	switch {
	case before == nil:
		e.Action, e.Version = store.ActionCreated, k.version(after)
	case after == nil:
		e.Action, e.Version = store.ActionDeleted, k.version(before)
	default:
		e.Action, e.Version = store.ActionUpdated, k.version(after)
	}
	e.Changes, e.Items = diffRecord(k, before, after)
	return e
}

// fieldChanges compares the named values of a record before and after a
// change; a create lists every value it set (From nil), a delete none.
type fieldChanges map[string]store.FieldChange

func (c fieldChanges) add(name string, from, to any, created bool) {
	if created {
		if to != "" && to != nil {
			c[name] = store.FieldChange{To: to}
		}
		return
	}
	if from != to {
		c[name] = store.FieldChange{From: from, To: to}
	}
}

func isSecret(v any) bool {
	_, ok := v.(secret)
	return ok
}

// addSecret records that a secret was set (a create) or changed,
// without its values.
func (c fieldChanges) addSecret(name string, changed, created bool) {
	switch {
	case created:
		c[name] = store.FieldChange{To: "set"}
	case changed:
		c[name] = store.FieldChange{To: "changed"}
	}
}

func (c fieldChanges) orNil() map[string]store.FieldChange {
	if len(c) == 0 {
		return nil
	}
	return c
}

// diffRecord is what a change did to a record: its fields (k.fields), and
// its item rows paired as the conflict view pairs them (the same item,
// then the same SKU, then the same name). A delete says neither.
func diffRecord[T any](k *kind[T], before, after *T) (map[string]store.FieldChange, *store.ItemChanges) {
	if after == nil {
		return nil, nil
	}
	c := fieldChanges{}
	created := before == nil
	for _, f := range k.fields {
		var from any
		if !created {
			from = f.value(before)
		}
		if to := f.value(after); isSecret(to) {
			c.addSecret(f.name, from != to, created)
		} else {
			c.add(f.name, from, to, created)
		}
	}
	var items *store.ItemChanges
	if k.rows != nil {
		var was []store.Item
		if !created {
			was = k.rows(before)
		}
		items = diffItems(was, k.rows(after))
	}
	return c.orNil(), items
}

// diffItems pairs the items of before and after (PairBy: the same item,
// then the same SKU, then the same name).
func diffItems(before, after []store.Item) *store.ItemChanges {
	paired := store.PairBy(len(after), len(before),
		func(j, i int) bool { return before[i] == after[j] },
		func(j, i int) bool { return before[i].SKU != "" && strings.EqualFold(before[i].SKU, after[j].SKU) },
		func(j, i int) bool { return strings.EqualFold(before[i].Name, after[j].Name) })
	used := make([]bool, len(before))
	for _, i := range paired {
		if i >= 0 {
			used[i] = true
		}
	}
	ch := &store.ItemChanges{}
	for j, it := range after {
		switch i := paired[j]; {
		case i < 0:
			ch.Added = append(ch.Added, it)
		case before[i] != it:
			ch.Changed = append(ch.Changed, store.ItemChange{From: before[i], To: it})
		}
	}
	for i, old := range before {
		if !used[i] {
			ch.Removed = append(ch.Removed, old)
		}
	}
	if len(ch.Added)+len(ch.Removed)+len(ch.Changed) == 0 {
		return nil
	}
	return ch
}

// history reads a page of the history of the record at key, newest first,
// before the entry named by cursor ("" starts at the newest).
func (s *Store) history(ctx context.Context, key, cursor string, perPage int) (store.HistoryPage, error) {
	max := "+inf"
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 1 {
			return store.HistoryPage{}, store.Errorf(store.EINVALID, "before must be the cursor of a history entry")
		}
		max = "(" + cursor
	}
	if perPage < 1 || perPage > store.MaxPerPage {
		perPage = store.HistoryPerPage
	}
	// The page's entries from the changes and from the notes, merged: the
	// numbers are one sequence.
	var sets [2]*redis.ZSliceCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range []string{historyKey(key), notesKey(key)} {
			sets[i] = p.ZRevRangeByScoreWithScores(ctx, k, &redis.ZRangeBy{Max: max, Min: "-inf", Count: int64(perPage) + 1})
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return store.HistoryPage{}, wrap(err)
	}
	zs := append(sets[0].Val(), sets[1].Val()...)
	slices.SortFunc(zs, func(a, b redis.Z) int { return cmp.Compare(b.Score, a.Score) })
	out := store.HistoryPage{Entries: make([]store.HistoryEntry, 0, min(len(zs), perPage))}
	for i, z := range zs {
		if i == perPage {
			// The page's last member, read or not: an entry that cannot
			// be read (damaged) is skipped, and the next page still starts
			// after it.
			out.Next = strconv.FormatInt(int64(zs[i-1].Score), 10)
			break
		}
		m, _ := z.Member.(string)
		e, ok := decodeEntry(m)
		if !ok {
			continue
		}
		e.Cursor = strconv.FormatInt(int64(z.Score), 10)
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

// addNote appends a note to the history of the record at key (its
// version in field versionField): the record does not change. The note
// is numbered under a WATCH of the record and its history, like a change.
func (s *Store) addNote(ctx context.Context, key, versionField, note string) (*store.HistoryEntry, error) {
	text, msg := store.CheckText(note, store.MaxNote, true, true)
	if msg != "" {
		return nil, &store.Error{Code: store.EINVALID, Message: "the note is not valid", Fields: map[string]string{"note": msg}}
	}
	a := store.ActorOf(ctx)
	e := &store.HistoryEntry{At: s.now().UTC().Truncate(time.Second), Actor: a.Name, Via: a.Via, Action: store.ActionNote, Note: text}
	for range maxRetries {
		var seq int64
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			var v *redis.StringCmd
			var tail historyTail
			if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				v, tail = p.HGet(ctx, key, versionField), readTail(ctx, p, key, true)
				return nil
			}); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			version, err := strconv.ParseInt(v.Val(), 10, 64)
			if err != nil {
				return store.Errorf(store.ENOTFOUND, "not found")
			}
			if tail.count.Val() >= store.MaxHistoryNotes {
				return &store.Error{Code: store.EINVALID, Message: "the note is not valid", Fields: map[string]string{
					"note": fmt.Sprintf("is one more than the %d notes a record keeps", store.MaxHistoryNotes)}}
			}
			e.Version = version
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				seq = queueHistory(ctx, p, key, tail, e)
				return nil
			})
			return err
		}, key, historyKey(key), notesKey(key))
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return nil, wrap(err)
		}
		e.Cursor = strconv.FormatInt(seq, 10)
		return e, nil
	}
	return nil, &store.Error{Code: store.EUNAVAILABLE, Message: "too many people are changing this record at once; try again in a moment"}
}

// historyOf reads a page of the history of record id of kind k, newest
// first, before the entry named by cursor ("": from the newest); perPage 0
// is 25. A record that is neither stored nor has a history (deleted over
// 30 days ago, or never created) is not found.
func historyOf[T any](ctx context.Context, s *Store, k *kind[T], id int64, cursor string, perPage int) (store.HistoryPage, error) {
	key := k.key(s, id)
	page, err := s.history(ctx, key, cursor, perPage)
	if err != nil || len(page.Entries) > 0 || cursor != "" {
		return page, err
	}
	n, err := s.rdb.Exists(ctx, key).Result()
	if err != nil {
		return page, wrap(err)
	}
	if n == 0 {
		return page, k.notFound(id)
	}
	return page, nil
}

// noteOn appends a note to the history of record id of kind k; the record
// itself, its version included, does not change.
func noteOn[T any](ctx context.Context, s *Store, k *kind[T], id int64, note string) (*store.HistoryEntry, error) {
	e, err := s.addNote(ctx, k.key(s, id), k.versionField, note)
	if store.ErrorCode(err) == store.ENOTFOUND {
		return nil, k.notFound(id)
	}
	return e, err
}
