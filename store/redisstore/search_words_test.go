package redisstore_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// wordsFixture holds names with hyphens, apostrophes and dots, an email,
// and decoys that have the same words in another order or apart.
func wordsFixture(t *testing.T, f *fixture) map[string]int64 {
	t.Helper()
	id := map[string]int64{}
	mk := func(key, customer, email string) {
		id[key] = f.create(t, customer, func(in *store.OrderInput) {
			if email != "" {
				in.Email = ptr(email)
			}
		}).ID
	}
	mk("tim", "Tim Berners-Lee", "")
	mk("reversed", "Lee Berners", "")
	mk("obrien", "Pat O'Brien", "")
	mk("apart", "Oscar Brien", "")
	mk("picard", "Jean-Luc Picard", "")
	mk("jean", "Jean Luc-Smith", "")
	mk("luc", "Luc Jean", "")
	mk("ada", "Ada Byron", "ada@example.com")
	mk("grace", "Grace Hopper", "grace.hopper@navy.mil")
	mk("jr", "J.R. Tolkien", "")
	return id
}

// TestSearchMatchesWordsAsTyped: a query term splits into words as names
// do (at hyphens, apostrophes, dots, @) and matches those words in a row;
// the parts of an email are words too, and the whole address stays
// searchable from its start.
func TestSearchMatchesWordsAsTyped(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			id := wordsFixture(t, f)
			for _, c := range []struct {
				q    string
				want []string
			}{
				{"Berners-Lee", []string{"tim"}},
				{"berners-l", []string{"tim"}},
				{"Berners Lee", []string{"reversed", "tim"}}, // two terms: each anywhere
				{"tim berners-lee", []string{"tim"}},
				{"lee-berners", []string{"reversed"}},
				{"O'Brien", []string{"obrien"}},
				{"o\u2019brien", []string{"obrien"}}, // a typographic apostrophe
				{"O'Bri", []string{"obrien"}},
				{"jean-luc", []string{"jean", "picard"}},
				{"Jean-Luc Picard", []string{"picard"}},
				{"luc-jean", []string{"luc"}},
				{"j.r.", []string{"jr"}},
				{"j.r.tolk", []string{"jr"}},
				{"example", []string{"ada"}},
				{"example.com", []string{"ada"}},
				{"ada@example.com", []string{"ada"}},
				{"ada@exa", []string{"ada"}},
				{"ada", []string{"ada"}},
				{"navy", []string{"grace"}},
				{"hopper@navy", []string{"grace"}},
				{"grace.hopper@navy.mil", []string{"grace"}},
				{"grace.h", []string{"grace"}},
				{"mil", []string{"grace"}},
				{"example.mil", nil},
				{"byron@example", nil},
			} {
				for _, st := range []store.Status{"", store.Pending} {
					p := f.list(t, store.OrderQuery{Q: c.q, Status: st})
					var want []int64
					for _, k := range c.want {
						want = append(want, id[k])
					}
					got := ids(p)
					slices.Sort(got)
					slices.Sort(want)
					if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) || p.Total != int64(len(want)) || p.TotalIsLowerBound {
						t.Errorf("q=%q status=%q: got %v (total %d, lower bound %v), want %v %v", c.q, st, got, p.Total, p.TotalIsLowerBound, want, c.want)
					}
				}
			}
		})
	}
}

// TestUpgradeRebuildsSearchTermsWrittenOneWordEach: data written by the
// layout before runs of words (one entry per word, the email whole) is
// found the new way after Upgrade (which orders -repair and the start of a
// new version run), and Repair then finds nothing wrong.
func TestUpgradeRebuildsSearchTermsWrittenOneWordEach(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			id := wordsFixture(t, f)
			// Rewrite every search entry the old way: each word of the name,
			// the email whole, in the set of the term's first character.
			var all []*store.Order
			for _, k := range f.keys(t) {
				if strings.HasPrefix(k, "ix:{w}:") {
					must(t, tg.Client.Del(ctx, f.prefix+k).Err())
				}
			}
			for _, oid := range id {
				o, err := f.s.GetOrder(ctx, oid)
				must(t, err)
				all = append(all, o)
			}
			for _, o := range all {
				inv := invID(t, f, o)
				words := strings.FieldsFunc(strings.ToLower(o.Customer), func(r rune) bool { return !('a' <= r && r <= 'z') })
				if o.Email != "" {
					words = append(words, o.Email)
				}
				for _, w := range words {
					key := f.prefix + "ix:{w}:" + string(o.Status) + ":" + w[:1]
					must(t, tg.Client.ZAdd(ctx, key, redis.Z{Member: w + "\x00" + inv}).Err())
				}
			}
			must(t, tg.Client.Set(ctx, f.prefix+"layout", "6", 0).Err())
			if p := f.list(t, store.OrderQuery{Q: "example"}); p.Total != 0 {
				t.Fatalf("before Upgrade, the old entries already find %q: %d", "example", p.Total)
			}
			ran, r, err := f.s.Upgrade(ctx)
			if err != nil || !ran || r.Missing == 0 || r.Stale == 0 {
				t.Fatalf("Upgrade: ran %v, %v, %v; want the old entries stale and the new ones missing", ran, r, err)
			}
			if v, _ := tg.Client.Get(ctx, f.prefix+"layout").Result(); v != redisstore.Layout {
				t.Errorf("layout %q after Upgrade, want %q", v, redisstore.Layout)
			}
			if r, err := f.s.Repair(ctx, false); err != nil || r.Problems() != 0 {
				t.Errorf("Repair(check) after Upgrade: %v, %v", r, err)
			}
			for q, want := range map[string]int64{"Berners-Lee": id["tim"], "example": id["ada"], "jean-luc picard": id["picard"], "o'brien": id["obrien"]} {
				if p := f.list(t, store.OrderQuery{Q: q}); !slices.Equal(ids(p), []int64{want}) || p.Total != 1 {
					t.Errorf("after Upgrade q=%q: %v (total %d), want [%d]", q, ids(p), p.Total, want)
				}
			}
		})
	}
}

// invID is the inverted id that ends o's entries in the name index.
func invID(t *testing.T, f *fixture, o *store.Order) string {
	t.Helper()
	ms, err := f.tg.Client.ZRangeByLex(context.Background(), f.prefix+"ix:name", &redis.ZRangeBy{Min: "[" + strings.ToLower(o.Customer) + "\x00", Max: "(" + strings.ToLower(o.Customer) + "\x01"}).Result()
	if err != nil || len(ms) != 1 {
		t.Fatalf("the name entry of %q: %v, %v", o.Customer, ms, err)
	}
	_, inv, _ := strings.Cut(ms[0], "\x00")
	return inv
}

// TestSearchOfCommonTermsCountsExactly: two terms that each match more
// than MaxCandidates orders (every demo email's "example" and "com") are
// answered from the term indexes with an exact total, not "at least"; a
// sort asked for so many matches is refused with SortTooBroad, and one
// for a rarer pair (a full name) applies.
func TestSearchOfCommonTermsCountsExactly(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			n := 24000
			if _, err := f.s.Seed(ctx, n, rand.New(rand.NewPCG(5, 5))); err != nil {
				t.Fatal(err)
			}
			one := f.list(t, store.OrderQuery{Q: "example"})
			if one.Total <= store.MaxCandidates || one.TotalIsLowerBound {
				t.Fatalf("q=example: %d (lower bound %v); want more than %d, exact", one.Total, one.TotalIsLowerBound, store.MaxCandidates)
			}
			for _, q := range []string{"example com", "com example", "example.com com"} {
				p := f.list(t, store.OrderQuery{Q: q, PerPage: 100, Page: 3})
				if p.Total != one.Total || p.TotalIsLowerBound || len(p.Orders) != 100 {
					t.Errorf("q=%q: total %d (lower bound %v), %d on page 3; want %d, exact, 100", q, p.Total, p.TotalIsLowerBound, len(p.Orders), one.Total)
				}
			}
			if p := f.list(t, store.OrderQuery{Q: "example com", Sort: store.SortTotal, SortAsked: true}); !p.SortTooBroad || !p.MatchOrder {
				t.Errorf("q=example com sort=total: too broad %v, match order %v; want the sort refused", p.SortTooBroad, p.MatchOrder)
			}
			name := f.list(t, store.OrderQuery{Q: "ada lovelace", PerPage: 100, Sort: store.SortTotal, SortAsked: true})
			if name.SortTooBroad || name.MatchOrder || name.TotalIsLowerBound || name.Total == 0 {
				t.Errorf("q=ada lovelace sort=total: %d (lower bound %v, too broad %v, match order %v)", name.Total, name.TotalIsLowerBound, name.SortTooBroad, name.MatchOrder)
			}
			for i := 1; i < len(name.Orders); i++ {
				if name.Orders[i].Total < name.Orders[i-1].Total {
					t.Fatalf("q=ada lovelace sort=total: %v before %v", name.Orders[i-1].Total, name.Orders[i].Total)
				}
			}
		})
	}
}
