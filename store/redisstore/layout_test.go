package redisstore

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"orders/store"
)

// TestNameMember: members sort by name, then newest first, whatever the
// ids' lengths, and give their id back.
func TestNameMember(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	ids := []int64{1, 2, 9, 10, 63, 64, 65, 99, 100, 4095, 4096, 262143, 262144, 999999, 1000000, 1 << 40, 1e18 - 1}
	for range 2000 {
		ids = append(ids, 1+rnd.Int64N(1e18-1))
	}
	names := []string{"ada", "Ada Allen", "ada lovelace", "Åsa", "Zoë", "b"}
	type entry struct {
		name string
		id   int64
		m    string
	}
	var es []entry
	for _, n := range names {
		for _, id := range ids {
			m := nameMember(n, id)
			if got, ok := memberID(m); !ok || got != id {
				t.Fatalf("memberID(nameMember(%q, %d)) = %d, %v", n, id, got, ok)
			}
			if !strings.HasPrefix(m, foldName(n)+"\x00") {
				t.Fatalf("nameMember(%q, %d) = %q: want the folded name first", n, id, m)
			}
			es = append(es, entry{foldName(n), id, m})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].m < es[j].m })
	for i := 1; i < len(es); i++ {
		a, b := es[i-1], es[i]
		if a.name > b.name || (a.name == b.name && a.id < b.id) {
			t.Fatalf("member order: %q (%d) before %q (%d)", a.name, a.id, b.name, b.id)
		}
	}
	for _, bad := range []string{"", "ada", "ada\x00", "ada\x00y", "ada\x00y!", "ada\x00zz"} {
		if id, ok := memberID(bad); ok {
			t.Errorf("memberID(%q) = %d, true; want false", bad, id)
		}
	}
}

// TestOrderHash: an order survives its hash, items in order, optional
// fields left out when empty.
func TestOrderHash(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	o := store.Order{ID: 7, Customer: "Ada Lovelace", Status: store.Shipped, Currency: "USD", Version: 3, CreatedAt: at, UpdatedAt: at.Add(time.Hour)}
	for i := range 12 {
		o.Items = append(o.Items, store.Item{SKU: []string{"", "MUG-01"}[i%2], Name: "Mug  with spaces " + strings.Repeat("x", i), Quantity: int64(i + 1), UnitPrice: store.Money(100 * i)})
	}
	o.Derive()
	h := map[string]string{}
	args := orderArgs(nil, &o)
	for i := 0; i < len(args); i += 2 {
		h[args[i].(string)] = fmt.Sprint(args[i+1])
	}
	for _, f := range []string{fEmail, fCurrency, fNotes} {
		if _, ok := h[f]; ok {
			t.Errorf("field %q stored for an empty or default value", f)
		}
	}
	got, ok := decodeOrder(7, h, true)
	if !ok {
		t.Fatal("decodeOrder: not ok")
	}
	if got.Customer != o.Customer || got.Status != o.Status || got.Currency != "USD" || got.Version != 3 ||
		!got.CreatedAt.Equal(o.CreatedAt) || !got.UpdatedAt.Equal(o.UpdatedAt) || got.ItemCount != 12 || got.Total != o.Total {
		t.Errorf("decodeOrder: got %+v, want %+v", got, o)
	}
	for i := range o.Items {
		if got.Items[i] != o.Items[i] {
			t.Errorf("item %d: got %+v, want %+v", i, got.Items[i], o.Items[i])
		}
	}
	if s, _ := decodeOrder(7, h, false); s.Items != nil || s.ItemCount != 12 || s.Total != o.Total {
		t.Errorf("without items: got items %v count %d total %s", s.Items, s.ItemCount, s.Total)
	}
}
