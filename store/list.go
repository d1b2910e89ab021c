package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/text/unicode/norm"
)

// Query selects a page of the collection (CONTRACT §4).
type Query struct {
	// Q is an exact order id or a case-insensitive prefix of the customer name.
	Q string
	// Status, when set, keeps only orders in that status.
	Status Status
	// Sort orders the results when there is no Q (with Q they come in
	// match order); empty means SortCreatedDesc.
	Sort Sort
	// From and To, when not zero, keep orders created on or after From's
	// UTC date and on or before To's (whole days, inclusive).
	From, To time.Time
	// Page counts from 1; PerPage is 1 to 100.
	Page, PerPage int
	// Items says whether to load each order's items (the Inquiry).
	Items bool
}

// Page is one page of orders and the number of orders that match in all.
type Page struct {
	Orders []Order
	// Total counts the matching orders; when TotalIsLowerBound is set the
	// search stopped after MaxCandidates and there are at least Total.
	Total             int64
	TotalIsLowerBound bool
	// MatchOrder says the orders come in match order (a search), not in
	// the order Query.Sort asked for.
	MatchOrder bool
	Page       int
	PerPage    int
}

// Sort names an order of the List (CONTRACT §4): a field, descending when
// it starts with "-".
type Sort string

// The sorts the List knows; the first is the default.
const (
	SortCreatedDesc  Sort = "-created"
	SortCreated      Sort = "created"
	SortCustomer     Sort = "customer"
	SortCustomerDesc Sort = "-customer"
	SortUpdatedDesc  Sort = "-updated"
	SortUpdated      Sort = "updated"
	SortTotalDesc    Sort = "-total"
	SortTotal        Sort = "total"
)

// Sorts lists every Sort, the default first.
var Sorts = []Sort{SortCreatedDesc, SortCreated, SortCustomer, SortCustomerDesc,
	SortUpdatedDesc, SortUpdated, SortTotalDesc, SortTotal}

// Valid reports whether s is one of Sorts.
func (s Sort) Valid() bool {
	for _, v := range Sorts {
		if s == v {
			return true
		}
	}
	return false
}

// Field is the sorted field without its direction ("created").
func (s Sort) Field() string { return strings.TrimPrefix(string(s), "-") }

// Desc reports whether s sorts descending.
func (s Sort) Desc() bool { return strings.HasPrefix(string(s), "-") }

// MaxCandidates bounds the orders a search of several terms (or a search
// with a status or date filter) examines; past it the total is a lower bound.
const MaxCandidates = 10000

// Default and largest page sizes.
const (
	DefaultPerPage = 25
	MaxPerPage     = 100
	// MaxQuery bounds the length of a search.
	MaxQuery = 120
)

// Normalize clamps the page numbers and tidies the search text.
func (q *Query) Normalize() {
	if q.PerPage == 0 {
		q.PerPage = DefaultPerPage
	}
	q.PerPage = min(max(q.PerPage, 1), MaxPerPage)
	q.Page = max(q.Page, 1)
	if q.Sort == "" {
		q.Sort = SortCreatedDesc
	}
	// Stored names are NFC (cleanText): so is what is searched for.
	q.Q = norm.NFC.String(strings.TrimSpace(q.Q))
	if r := []rune(q.Q); len(r) > MaxQuery {
		q.Q = string(r[:MaxQuery])
	}
}

// List returns one page of orders in two pipelined round trips, whatever
// the page size: the first reads the index range and its count, the second
// reads the orders (each one hash, items included; only the Inquiry keeps
// the items).
func (s *Store) List(ctx context.Context, q Query) (Page, error) {
	q.Normalize()
	out := Page{Page: q.Page, PerPage: q.PerPage, Orders: []Order{}}
	offset := int64(q.Page-1) * int64(q.PerPage)
	if int64(q.Page) > 1<<40/MaxPerPage || offset > 1<<40 {
		// Far past any end, without overflow: empty, with the total counted.
		offset = 1 << 40
	}
	count := int64(q.PerPage)

	var (
		rangeCmd *redis.StringSliceCmd
		totalCmd *redis.IntCmd
		exact    int64 // an order id named by a digits query
		exactO   *redis.MapStringStringCmd
		shift    int64 // name results skipped for the exact match
	)
	if id, ok := ParseID(q.Q); ok {
		exact = id
		// The exact match, if it exists, takes the first place of page 1,
		// so the name results start one earlier; one extra is fetched and
		// dropped when there is no exact match.
		shift = 1
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if q.Q == "" {
			key := s.idIndex(q.Status)
			rangeCmd = p.ZRevRange(ctx, key, offset, offset+count-1)
			totalCmd = p.ZCard(ctx, key)
			return nil
		}
		key := s.nameIndex(q.Status)
		prefix := foldName(q.Q)
		lo, hi := "["+prefix, "("+prefix+"\xff"
		start := max(offset-shift, 0)
		n := count
		if shift == 1 && offset > 0 {
			n++
		}
		rangeCmd = p.ZRangeByLex(ctx, key, &redis.ZRangeBy{Min: lo, Max: hi, Offset: start, Count: n})
		totalCmd = p.ZLexCount(ctx, key, lo, hi)
		if exact != 0 {
			exactO = p.HGetAll(ctx, s.orderKey(exact))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return out, wrap(err)
	}
	out.Total = totalCmd.Val()

	var ids []int64
	var members map[int64]string // name-index entries, by id
	if q.Q == "" {
		for _, m := range rangeCmd.Val() {
			if id, err := strconv.ParseInt(m, 10, 64); err == nil {
				ids = append(ids, id)
			}
		}
	} else {
		names := rangeCmd.Val()
		hasExact := false
		exactMember := "" // the exact match's own name entry, when its name matches too
		if exact != 0 {
			if o, ok := decodeOrder(exact, exactO.Val(), false); ok && (q.Status == "" || o.Status == q.Status) {
				hasExact = true
				if strings.HasPrefix(foldName(o.Customer), foldName(q.Q)) {
					// Already counted by ZLEXCOUNT; listed once, first.
					exactMember = nameMember(o.Customer, exact)
				} else {
					out.Total++
				}
			}
		}
		if hasExact && exactMember != "" {
			if offset > 0 && len(names) > 0 && names[0] > exactMember {
				names = names[1:] // its entry lies before this page: all shift by one
			}
			for i, m := range names {
				if m == exactMember {
					names = append(names[:i:i], names[i+1:]...)
					break
				}
			}
		}
		switch {
		case hasExact && offset == 0:
			ids = append(ids, exact)
			if int64(len(names)) > count-1 {
				names = names[:count-1]
			}
		case !hasExact && shift == 1 && offset > 0 && len(names) > 0:
			names = names[1:] // the extra one fetched for a missing exact match
		}
		if int64(len(names)) > count {
			names = names[:count]
		}
		members = make(map[int64]string, len(names))
		for _, m := range names {
			if id, ok := memberID(m); ok && !(hasExact && id == exact) {
				ids = append(ids, id)
				members[id] = m
			}
		}
	}
	orders, err := s.loadMany(ctx, ids, members, q)
	if err != nil {
		return out, err
	}
	out.Orders = orders
	return out, nil
}

// loadMany reads the given orders in one pipelined round trip, skipping
// (and repairing) index entries whose order is gone or no longer matches.
// members holds the name-index entries the ids came from, if they did.
func (s *Store) loadMany(ctx context.Context, ids []int64, members map[int64]string, q Query) ([]Order, error) {
	orders := make([]Order, 0, len(ids))
	if len(ids) == 0 {
		return orders, nil
	}
	ocs := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			ocs[i] = p.HGetAll(ctx, s.orderKey(id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	var missing []int64
	prefix := foldName(q.Q)
	for i, id := range ids {
		o, ok := decodeOrder(id, ocs[i].Val(), q.Items)
		if !ok {
			if h := ocs[i].Val(); len(h) > 0 {
				s.damaged(s.orderKey(id), h)
			}
			missing = append(missing, id)
			continue
		}
		// On a Cluster an index entry may lag its order for a moment.
		if q.Status != "" && o.Status != q.Status {
			continue
		}
		if prefix != "" && id != q.exactID() && !strings.HasPrefix(foldName(o.Customer), prefix) {
			continue
		}
		orders = append(orders, o)
	}
	if len(missing) > 0 {
		stale := make([]string, 0, len(missing))
		for _, id := range missing {
			if m, ok := members[id]; ok {
				stale = append(stale, m)
			}
		}
		go s.repair(missing, stale)
	}
	return orders, nil
}

func (q Query) exactID() int64 {
	id, _ := ParseID(q.Q)
	return id
}

// repair removes the index entries of orders that no longer exist: the
// id-index entries of ids, and the name-index entries names. Only a Cluster,
// where index entries are written outside the order's transaction, can leave
// such entries behind (a crash between the two); each id is checked again
// first, so an order that exists keeps its entries.
func (s *Store) repair(ids []int64, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for i, id := range ids {
		if n, err := s.rdb.Exists(ctx, s.orderKey(id)).Result(); err != nil || n != 0 {
			continue
		}
		m := strconv.FormatInt(id, 10)
		s.rdb.ZRem(ctx, s.idIndex(""), m)
		for _, st := range Statuses {
			s.rdb.ZRem(ctx, s.idIndex(st), m)
		}
		for _, name := range names {
			if got, ok := memberID(name); ok && got == ids[i] {
				s.rdb.ZRem(ctx, s.nameIndex(""), name)
				for _, st := range Statuses {
					s.rdb.ZRem(ctx, s.nameIndex(st), name)
				}
			}
		}
	}
}
