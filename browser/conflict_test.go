package browser_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"orders/store"
)

// TestStaleEditShowsConflict: a person edits an order while someone else
// saves it. Their save is refused with both versions shown, nothing typed is
// lost, and a second save overwrites deliberately.
func TestStaleEditShowsConflict(t *testing.T) {
	e := start(t, true)
	o := e.seed(t, "Katherine Johnson")[0]
	e.do(t, "open the edit form",
		chromedp.Navigate(e.base+"/orders/1/edit"),
		chromedp.WaitVisible(css("#customer")),
		chromedp.SetValue(css("#customer"), "Katherine G. Johnson"),
		chromedp.SetValue(css("#notes"), "call before delivery"),
	)
	// Someone else saves first.
	other := "K. Johnson (NASA)"
	if _, err := e.store.Update(context.Background(), o.ID, store.Input{Customer: &other}, 0); err != nil {
		t.Fatal(err)
	}
	e.do(t, "save the stale form", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order-form .conflict")))
	e.shot(t, "edit-conflict")
	e.waitText(t, "#order-form .conflict", other)
	if got := run(t, e, "customer field", chromedp.Value(css("#customer"))); got != "Katherine G. Johnson" {
		t.Errorf("after the conflict the customer field holds %q, want what the person typed", got)
	}
	if got := run(t, e, "notes field", chromedp.Value(css("#notes"))); got != "call before delivery" {
		t.Errorf("after the conflict the notes field holds %q, want what the person typed", got)
	}
	if cur, _ := e.store.Get(context.Background(), o.ID); cur.Customer != other {
		t.Errorf("the stale save overwrote the order: customer %q", cur.Customer)
	}
	// Saving again is deliberate: it overwrites.
	e.do(t, "save again", chromedp.Click(css("#order-edit .actions button[type=submit]")), chromedp.WaitVisible(css("#order")))
	e.waitText(t, "#order .facts", "Katherine G. Johnson")
	if cur, _ := e.store.Get(context.Background(), o.ID); cur.Version != 3 || !strings.Contains(cur.Notes, "delivery") {
		t.Errorf("after the deliberate save: version %d notes %q, want version 3 and the person's notes", cur.Version, cur.Notes)
	}
}

// TestInlineEditConflict: the same in a list row.
func TestInlineEditConflict(t *testing.T) {
	e := start(t, true)
	o := e.seed(t, "Frances Allen")[0]
	e.do(t, "open the row form",
		chromedp.Navigate(e.base+"/orders"),
		chromedp.Click(css("#order-row-1 a[hx-get]")),
		chromedp.WaitVisible(css("#row-1-customer")),
		chromedp.SetValue(css("#row-1-customer"), "Frances E. Allen"),
	)
	other := "F. Allen (IBM)"
	if _, err := e.store.Update(context.Background(), o.ID, store.Input{Customer: &other}, 0); err != nil {
		t.Fatal(err)
	}
	e.do(t, "save the stale row", chromedp.Click(css("#order-row-1 button[type=submit]")), chromedp.WaitVisible(css("#order-row-1 .conflict")))
	e.waitText(t, "#order-row-1 .conflict", other)
	if got := run(t, e, "row customer", chromedp.Value(css("#row-1-customer"))); got != "Frances E. Allen" {
		t.Errorf("after the conflict the row holds %q, want what the person typed", got)
	}
	e.do(t, "save again", chromedp.Click(css("#order-row-1 button[type=submit]")), chromedp.WaitNotPresent(css("#row-1-customer")))
	e.waitText(t, "#order-row-1", "Frances E. Allen")
}
