package redisstore_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

// failExec fails the next n transactions before they reach Redis, as a
// crash or a dropped connection between claiming a key and creating the
// order would.
type failExec struct{ n atomic.Int64 }

func (f *failExec) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (f *failExec) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f *failExec) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "exec" && f.n.Add(-1) >= 0 {
				return errInjected
			}
		}
		return next(ctx, cmds)
	}
}

// TestCreateOnceCompletesAnInterruptedCreate: when the first request with
// an Idempotency-Key claimed it but failed before the order was written
// (the client saw a 503), the retry creates the order under the claimed id:
// one order, never two, and a third try reads it back.
func TestCreateOnceCompletesAnInterruptedCreate(t *testing.T) {
	ctx := context.Background()
	mr := testutil.Miniredis(t).Client.(*redis.Client)
	fe := &failExec{}
	mr.AddHook(fe)
	st := redisstore.New(mr, redisstore.Options{})
	in := store.OrderInput{Customer: ptr("Ada Lovelace")}
	fe.n.Store(1)
	if _, err := st.CreateOrderOnce(ctx, "k-1", "fp", in); store.ErrorCode(err) != store.EUNAVAILABLE {
		t.Fatalf("first try: got %v, want %s (the injected failure)", err, store.EUNAVAILABLE)
	}
	o, err := st.CreateOrderOnce(ctx, "k-1", "fp", in)
	if err != nil || o.ID != 1 {
		t.Fatalf("retry: got %+v, %v; want order 1, the claimed id", o, err)
	}
	again, err := st.CreateOrderOnce(ctx, "k-1", "fp", in)
	if err != nil || again.ID != 1 || again.Version != 1 {
		t.Fatalf("third try: got %+v, %v; want order 1 again", again, err)
	}
	if n, _ := st.CountOrders(ctx); n != 1 {
		t.Errorf("orders stored: %d, want 1", n)
	}
	if _, err := st.CreateOrderOnce(ctx, "k-1", "other", in); store.ErrorCode(err) != store.EINVALID {
		t.Errorf("same key, other fingerprint: got %v, want %s", err, store.EINVALID)
	}
}
