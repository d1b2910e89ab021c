package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"orders/store"
)

// Every view key carries the hash tag {v}, so a view and its index
// entries change in one transaction on a Cluster too.
//
// Keys (with the store's prefix):
//
//	v:{v}:<id>             hash: n name, r resource, q query, o owner, s shared ("1" or absent), v, ca, ua
//	seq:{v}                the id counter
//	vx:{v}:created         by created time, score timeScore, member the id
//	vx:{v}:shared          the shared views, member "resource name NUL inverted-id" (lex, folded)
//	vx:{v}:own:<owner>     the views of one owner, members as vx:{v}:shared's

// View hash fields.
const (
	vfName     = "n"
	vfResource = "r"
	vfQuery    = "q"
	vfOwner    = "o"
	vfShared   = "s"
	vfVersion  = "v"
	vfCreated  = "ca"
	vfUpdated  = "ua"
)

func encodeView(v *store.View) []any {
	args := []any{vfName, v.Name, vfResource, v.Resource, vfOwner, v.Owner,
		vfVersion, v.Version, vfCreated, v.CreatedAt.Unix(), vfUpdated, v.UpdatedAt.Unix()}
	if v.Query != "" {
		args = append(args, vfQuery, v.Query)
	}
	if v.Shared {
		args = append(args, vfShared, "1")
	}
	return args
}

func decodeView(id int64, h map[string]string) (*store.View, bool) {
	if len(h) == 0 {
		return nil, false
	}
	v := &store.View{ID: id, Name: h[vfName], Resource: h[vfResource], Query: h[vfQuery], Owner: h[vfOwner], Shared: h[vfShared] == "1"}
	ver, err1 := strconv.ParseInt(h[vfVersion], 10, 64)
	ca, err2 := strconv.ParseInt(h[vfCreated], 10, 64)
	ua, err3 := strconv.ParseInt(h[vfUpdated], 10, 64)
	if errors.Join(err1, err2, err3) != nil || v.Name == "" || v.Owner == "" || ver < 1 {
		return nil, false
	}
	v.Version = ver
	v.CreatedAt, v.UpdatedAt = time.Unix(ca, 0).UTC(), time.Unix(ua, 0).UTC()
	return v, true
}

// viewIndex names a view index ("created", "shared", "own:<owner>").
func (s *Store) viewIndex(ix string) string { return s.prefix + "vx:{v}:" + ix }

// viewMember is a view's entry in the shared and owner indexes: its List
// and name, folded, so that an index reads by List, then by name.
func viewMember(v *store.View) string { return nameMember(v.Resource+" "+v.Name, v.ID) }

func (s *Store) viewEntries(v *store.View) []ixEntry {
	out := []ixEntry{
		{s.viewIndex("created"), strconv.FormatInt(v.ID, 10), timeScore(v.CreatedAt, v.ID)},
		{s.viewIndex("own:" + v.Owner), viewMember(v), 0},
	}
	if v.Shared {
		out = append(out, ixEntry{s.viewIndex("shared"), viewMember(v), 0})
	}
	return out
}

// viewKind is how saved views are stored.
var viewKind = register(&kind[store.View]{
	name:           store.ViewEvents,
	noun:           "view",
	seq:            "seq:{v}",
	slot:           "v",
	versionField:   vfVersion,
	decode:         decodeView,
	encode:         encodeView,
	meta:           func(v *store.View) recordMeta { return recordMeta{&v.ID, &v.Version, &v.CreatedAt, &v.UpdatedAt} },
	same:           func(a, b *store.View) bool { return *a == *b },
	entries:        (*Store).viewEntries,
	deleteConflict: "someone else changed this view; review the current values",
	fields: []recordField[store.View]{
		{"name", func(v *store.View) any { return v.Name }},
		{"resource", func(v *store.View) any { return v.Resource }},
		{"query", func(v *store.View) any { return v.Query }},
		{"shared", func(v *store.View) any { return v.Shared }},
	},
	event: func(v *store.View) []byte {
		b, _ := json.Marshal(struct {
			ID      int64  `json:"id"`
			Version int64  `json:"version"`
			Owner   string `json:"owner"`
			Shared  bool   `json:"shared"`
		}{v.ID, v.Version, v.Owner, v.Shared})
		return b
	},
	indexes: func(s *Store) []indexKey {
		return []indexKey{{s.viewIndex("created"), func(m string) (int64, bool) { return store.ParseID(m) }},
			{s.viewIndex("shared"), memberID}}
	},
	indexPattern: func(s *Store) string { return globEscape(s.viewIndex("own:")) + "*" },
	example: func(n int) (store.View, map[string]string) {
		name, res, q := "View "+strconv.Itoa(n), "orders", "status=pending&q=v"+strconv.Itoa(n)
		return store.ApplyView(nil, store.ViewInput{Name: &name, Resource: &res, Query: &q, Owner: "user" + strconv.Itoa(n)})
	},
})

// GetView reads one view.
func (s *Store) GetView(ctx context.Context, id int64) (*store.View, error) {
	v, err := getRecord(ctx, s, s.rdb, viewKind, id)
	return v, wrap(err)
}

// CreateView validates in and stores it as a new view of in.Owner.
func (s *Store) CreateView(ctx context.Context, in store.ViewInput) (*store.View, error) {
	v, errs := store.ApplyView(nil, in)
	if errs != nil {
		return nil, viewKind.invalid(errs, nil)
	}
	return createRecord(ctx, s, viewKind, v)
}

// UpdateView applies in to view id, with the same version checks as
// every record; its owner stays.
func (s *Store) UpdateView(ctx context.Context, id int64, in store.ViewInput, ifMatch int64) (*store.View, error) {
	return updateRecord(ctx, s, viewKind, id, ifMatch, in.Version, func(cur *store.View) (store.View, map[string]string) {
		return store.ApplyView(cur, in)
	})
}

// DeleteView removes view id.
func (s *Store) DeleteView(ctx context.Context, id int64, ifMatch, version int64) error {
	return deleteRecord(ctx, s, viewKind, id, ifMatch, version)
}

// ViewHistory is a page of view id's history, newest first.
func (s *Store) ViewHistory(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	return historyOf(ctx, s, viewKind, id, cursor, perPage)
}

// AddViewNote appends a note to view id's history.
func (s *Store) AddViewNote(ctx context.Context, id int64, note string) (*store.HistoryEntry, error) {
	return noteOn(ctx, s, viewKind, id, note)
}

// ListViews answers one page of the views q.Owner sees: their own and the
// shared ones, by List and name. It reads both indexes whole (the views
// one person sees, a few dozen), keeps those q asks for, and reads only
// the page's records: O(views seen + page).
func (s *Store) ListViews(ctx context.Context, q store.ViewQuery) (store.ViewPage, error) {
	page, perPage := max(q.Page, 1), min(max(q.PerPage, 1), store.MaxPerPage)
	if q.PerPage == 0 {
		perPage = store.DefaultPerPage
	}
	out := store.ViewPage{Views: []store.View{}, Page: page, PerPage: perPage}
	var own, shared *redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		shared = p.ZRange(ctx, s.viewIndex("shared"), 0, -1)
		if q.Owner != "" {
			own = p.ZRange(ctx, s.viewIndex("own:"+q.Owner), 0, -1)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return out, wrap(err)
	}
	members := shared.Val()
	if own != nil {
		members = mergeMembers(own.Val(), members)
	}
	match := viewMatcher(q)
	var ids []int64
	for _, m := range members {
		id, ok := memberID(m)
		if ok && match(m, id) {
			ids = append(ids, id)
		}
	}
	out.Total = int64(len(ids))
	start := min((page-1)*perPage, len(ids))
	out.Views, err = readRecords(ctx, s, viewKind, ids[start:min(start+perPage, len(ids))],
		func(v *store.View) bool { return v.Shared || v.Owner == q.Owner })
	return out, err
}

// mergeMembers is the sorted union of two sorted lists of members.
func mergeMembers(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch c := strings.Compare(a[0], b[0]); {
		case c < 0:
			out, a = append(out, a[0]), a[1:]
		case c > 0:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// viewMatcher keeps the index members of the views q asks for: of its
// List, and each word of Q starting a word of the name (or Q the view's
// number).
func viewMatcher(q store.ViewQuery) func(m string, id int64) bool {
	terms := wordsOf(foldTerm(q.Q))
	byID, isID := store.ParseID(strings.TrimSpace(q.Q))
	return func(m string, id int64) bool {
		text := m[:max(strings.LastIndexByte(m, 0), 0)]
		res, name, _ := strings.Cut(text, " ")
		if q.Resource != "" && res != q.Resource {
			return false
		}
		if isID && id == byID {
			return true
		}
		words := wordsOf(name)
		for _, t := range terms {
			found := false
			for _, w := range words {
				if strings.HasPrefix(w, t) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
}
