package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"orders/store/redisstore"
	"orders/testutil"
)

// TestClaimsHoldUnderConcurrentWrites: a kind that keeps to one slot claims
// a unique code inside the record's transaction, so twenty writers racing
// for one code (case aside) leave exactly one holder, on a single Redis and
// on a Cluster alike; renaming and deleting give the code up, and no two
// records ever hold one code.
func TestClaimsHoldUnderConcurrentWrites(t *testing.T) {
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx := context.Background()
			f := fresh(t, tg)
			race := func(base int64, code string) (winner int64) {
				var wg sync.WaitGroup
				var mu sync.Mutex
				won := []int64{}
				for i := range int64(20) {
					wg.Add(1)
					go func() {
						defer wg.Done()
						// Each writer spells it its own way: the claim is the lower-cased code.
						c := code
						if i%2 == 1 {
							c = strings.ToUpper(code[:1]) + code[1:]
						}
						err := f.s.PutCode(ctx, base+i, c)
						var taken *redisstore.CodeTakenError
						switch {
						case err == nil:
							mu.Lock()
							won = append(won, base+i)
							mu.Unlock()
						case errors.As(err, &taken):
							if taken.Owner < base || taken.Owner >= base+20 {
								t.Errorf("record %d: told %q is held by %d, not one of the writers", base+i, c, taken.Owner)
							}
						default:
							t.Errorf("record %d: %v", base+i, err)
						}
					}()
				}
				wg.Wait()
				if len(won) != 1 {
					t.Fatalf("%d writers raced for %q: %v got it, want exactly one", 20, code, won)
				}
				return won[0]
			}
			a := race(100, "abc")
			if owner, code, _ := f.s.CodeOwner(ctx, "ABC"); owner != a || (code != "abc" && code != "Abc") {
				t.Errorf("the claim of abc names record %d holding %q, want %d", owner, code, a)
			}
			// Renaming gives the old code up and takes the new one.
			if err := f.s.PutCode(ctx, a, "xyz"); err != nil {
				t.Fatal(err)
			}
			b := race(200, "abc")
			var taken *redisstore.CodeTakenError
			if err := f.s.PutCode(ctx, b, "XYZ"); !errors.As(err, &taken) || taken.Owner != a {
				t.Errorf("renaming %d to XYZ, held by %d: %v", b, a, err)
			}
			// Deleting gives it up.
			if err := f.s.PutCode(ctx, a, ""); err != nil {
				t.Fatal(err)
			}
			if err := f.s.PutCode(ctx, b, "XYZ"); err != nil {
				t.Errorf("XYZ after its holder was deleted: %v", err)
			}
			if owner, code, _ := f.s.CodeOwner(ctx, "abc"); owner != 0 {
				t.Errorf("abc is still claimed by %d (%q) after its holder took another code", owner, code)
			}
			if r, err := f.s.RepairCodes(ctx); err != nil || r.Problems() != 0 {
				t.Errorf("repair after the races: %v, %v", r, err)
			}
		})
	}
}
