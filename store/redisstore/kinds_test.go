package redisstore_test

// The suite every registered kind passes: it walks the registry and
// writes each kind's example records, so a new kind is tested by
// registering it with an example.

import (
	"context"
	"testing"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// TestEveryKindWritesAndChecksVersions: on every target, each registered
// kind creates its records with fresh ids at version 1, changes one (a
// change to the same values keeps the version), refuses a stale If-Match
// (precondition) and a stale version (conflict) without writing, deletes
// with the right version only, then answers not found; afterwards Repair
// finds nothing wrong with its records and indexes.
func TestEveryKindWritesAndChecksVersions(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			f := fresh(t, tg)
			ctx := context.Background()
			for _, k := range redisstore.RegisteredKinds(t) {
				t.Run(k.Name(), func(t *testing.T) {
					wantCode := func(what string, err error, code string) {
						t.Helper()
						if store.ErrorCode(err) != code || err == nil {
							t.Errorf("%s: got %v, want %s", what, err, code)
						}
					}
					holds := func(what string, id, version int64, n int) {
						t.Helper()
						v, ok, err := k.Holds(ctx, f.s, id, n)
						if err != nil || v != version || !ok {
							t.Errorf("%s: record %d at version %d holding example %d: %v, %v; want version %d holding it", what, id, v, n, ok, err, version)
						}
					}
					ids := map[int64]bool{}
					var id int64
					for n := 1; n <= 3; n++ {
						i, v, err := k.Create(ctx, f.s, n)
						if err != nil || v != 1 || i < 1 || ids[i] {
							t.Fatalf("create of example %d: id %d version %d, %v; want a fresh id at version 1", n, i, v, err)
						}
						ids[i], id = true, i
						holds("after its create", i, 1, n)
					}

					if v, err := k.Change(ctx, f.s, id, 10, 0, 1); err != nil || v != 2 {
						t.Fatalf("a change at version 1: version %d, %v; want 2", v, err)
					}
					holds("after a change", id, 2, 10)
					if v, err := k.Change(ctx, f.s, id, 10, 2, 2); err != nil || v != 2 {
						t.Errorf("a change to the same values: version %d, %v; want it kept at 2", v, err)
					}
					_, err := k.Change(ctx, f.s, id, 11, 1, 0)
					wantCode("a change with a stale If-Match", err, store.EPRECONDITION)
					_, err = k.Change(ctx, f.s, id, 11, 0, 1)
					wantCode("a change with a stale version", err, store.ECONFLICT)
					holds("after refused changes", id, 2, 10)
					_, err = k.Change(ctx, f.s, 999999, 11, 0, 0)
					wantCode("a change of an id never used", err, store.ENOTFOUND)

					wantCode("a delete with a stale version", k.Delete(ctx, f.s, id, 0, 1), store.ECONFLICT)
					wantCode("a delete with a stale If-Match", k.Delete(ctx, f.s, id, 1, 0), store.EPRECONDITION)
					holds("after refused deletes", id, 2, 10)
					if err := k.Delete(ctx, f.s, id, 0, 2); err != nil {
						t.Fatalf("a delete at the stored version: %v", err)
					}
					_, _, err = k.Holds(ctx, f.s, id, 10)
					wantCode("a get after the delete", err, store.ENOTFOUND)
					wantCode("a delete after the delete", k.Delete(ctx, f.s, id, 0, 0), store.ENOTFOUND)
					// The example's unique values are free again.
					if _, _, err := k.Create(ctx, f.s, 10); err != nil {
						t.Errorf("a create of the deleted record's values: %v", err)
					}
				})
			}
			r, err := f.s.Repair(ctx, false)
			if err != nil || r.Problems() != 0 {
				t.Errorf("Repair after the writes: %+v, %v; want no problems", r, err)
			}
		})
	}
}
