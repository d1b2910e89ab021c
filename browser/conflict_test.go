package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"orders/store"
	"orders/store/redisstore"
)

// conflictOrder stores the order the conflict tests edit: two items.
func conflictOrder(t *testing.T, st *redisstore.Store) *store.Order {
	t.Helper()
	customer, email := "Katherine Johnson", "kj@example.com"
	o, err := st.CreateOrder(context.Background(), store.OrderInput{Customer: &customer, Email: &email, HasItems: true,
		Items: []store.ItemInput{
			{SKU: "RULE-1", Name: "Slide rule", Quantity: "1", UnitPrice: "30.00"},
			{SKU: "PEN-2", Name: "Pencil", Quantity: "12", UnitPrice: "0.25"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// theirs is the other person's save: a new customer name and two of the
// slide rule.
func theirs(t *testing.T, st *redisstore.Store, id int64, customer string) {
	t.Helper()
	if _, err := st.UpdateOrder(context.Background(), id, store.OrderInput{Customer: &customer, HasItems: true,
		Items: []store.ItemInput{
			{SKU: "RULE-1", Name: "Slide rule", Quantity: "2", UnitPrice: "30.00"},
			{SKU: "PEN-2", Name: "Pencil", Quantity: "12", UnitPrice: "0.25"},
		}}, 0); err != nil {
		t.Fatal(err)
	}
}

// editMine makes the person's edit in the open form: a new customer name
// and notes, three slide rules, no pencils, an eraser.
func editMine() chromedp.Action[chromedp.Void] {
	return setValues(map[string]string{
		"customer": "Katherine G. Johnson", "notes": "call before delivery",
		"items-0-quantity": "3",
		"items-1-sku":      "", "items-1-name": "", "items-1-quantity": "", "items-1-unit_price": "",
		"items-2-name": "Eraser", "items-2-quantity": "1", "items-2-unit_price": "0.50",
	})
}

// setValues sets fields by id, as typing would (an input event each).
func setValues(v map[string]string) chromedp.Action[chromedp.Void] {
	b, _ := json.Marshal(v)
	return chromedp.Evaluate[chromedp.Void](`(() => { const v = ` + string(b) + `;
	  for (const [id, val] of Object.entries(v)) {
	    const el = document.getElementById(id);
	    if (!el) throw new Error("no #" + id);
	    el.value = val;
	    el.dispatchEvent(new Event("input", {bubbles: true}));
	  }
	})()`)
}

// rowsText reads a table's body rows as "cell | cell | cell" lines.
func (e *env) rowsText(t *testing.T, sel string) []string {
	t.Helper()
	js := fmt.Sprintf(`[...document.querySelectorAll(%q)].map(tr => [...tr.cells].map(c => c.innerText.replace(/\s+/g, " ").trim()).join(" | "))`, sel+" tbody tr, "+sel+" tfoot tr")
	return run(t, e, "reading "+sel, chromedp.Evaluate[[]string](js))
}

func wantRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot  %q\nwant %q", what, got, want)
	}
}

// TestConflictShowsYoursAndTheirs: a person edits an
// order while someone else saves it. The save answers 409 with yours and
// theirs side by side, only what differs, field by field and item by item;
// "Keep theirs" loads the stored order (nothing of theirs lost), and "Save
// mine over theirs" saves the person's edit deliberately. With JavaScript
// and without.
func TestConflictShowsYoursAndTheirs(t *testing.T) {
	for _, js := range []bool{true, false} {
		t.Run(map[bool]string{true: "js", false: "no-js"}[js], func(t *testing.T) {
			e := start(t, js)
			o := conflictOrder(t, e.store)
			id := fmt.Sprint(o.ID)
			panel := "#conflict-" + id
			save := css("#order-edit .actions button[type=submit]")
			conflict := func(what, other string) {
				t.Helper()
				e.do(t, what+": edit", chromedp.Navigate(e.base+"/orders/"+id+"/edit"), chromedp.WaitVisible(css("#customer")), editMine())
				theirs(t, e.store, o.ID, other)
				e.do(t, what+": save the stale form", chromedp.Click(save), chromedp.WaitVisible(css(panel)))
			}

			conflict("first", "K. Johnson (NASA)")
			e.shot(t, "conflict-form-"+map[bool]string{true: "js", false: "nojs"}[js])
			e.waitText(t, ".notices", "changed by someone else")
			wantRows(t, "the fields that differ", e.rowsText(t, panel+"-fields"), []string{
				"Customer | Katherine G. Johnson | K. Johnson (NASA)",
				"Notes | call before delivery | empty",
			})
			wantRows(t, "the items that differ", e.rowsText(t, panel+"-items"), []string{
				"Slide rule (RULE-1) | 3 × 30.00 = 90.00 | 2 × 30.00 = 60.00",
				"Pencil (PEN-2) | Not in yours | 12 × 0.25 = 3.00",
				"Eraser | 1 × 0.50 = 0.50 | Not in theirs",
				"Total | 90.50 | 63.00",
			})
			// What the person typed is still in the form.
			if got := run(t, e, "customer field", chromedp.Value(css("#customer"))); got != "Katherine G. Johnson" {
				t.Errorf("after the conflict the customer field holds %q, want what the person typed", got)
			}
			if cur, _ := e.store.GetOrder(context.Background(), o.ID); cur.Customer != "K. Johnson (NASA)" || cur.Version != 2 {
				t.Fatalf("the stale save changed the order: %+v", cur)
			}
			if js {
				// The panel takes focus, so a keyboard or screen reader user starts at the diff.
				if got := run(t, e, "focus", chromedp.Evaluate[string](`document.activeElement.id`)); got != "conflict-"+id+"-title" {
					t.Errorf("after the 409 focus is on #%s, want the conflict's heading", got)
				}
			}

			// Keep theirs: the stored order in the form, at its version.
			e.do(t, "keep theirs", chromedp.Click(css(panel+" a.button")), chromedp.WaitNotPresent(css(panel)), chromedp.WaitVisible(css("#customer")))
			if got := run(t, e, "customer", chromedp.Value(css("#customer"))); got != "K. Johnson (NASA)" {
				t.Errorf("keep theirs: the customer field holds %q, want theirs", got)
			}
			if got := run(t, e, "quantity", chromedp.Value(css("#items-0-quantity"))); got != "2" {
				t.Errorf("keep theirs: the slide rule quantity is %q, want theirs (2)", got)
			}
			if got := run(t, e, "version", chromedp.Value(css(`#order-edit input[name=version]`))); got != "2" {
				t.Errorf("keep theirs: the form carries version %q, want the stored 2", got)
			}
			if cur, _ := e.store.GetOrder(context.Background(), o.ID); cur.Version != 2 {
				t.Errorf("keep theirs saved something: version %d", cur.Version)
			}

			// Save mine over theirs: a new conflict (theirs again), then
			// the deliberate save of the person's input at the new version.
			conflict("second", "Katherine Johnson, NASA")
			e.do(t, "save mine", chromedp.Click(css(panel+" button[type=submit]")), chromedp.WaitVisible(css("#order")))
			e.waitText(t, "#notice", "Order "+id+" saved.")
			cur, _ := e.store.GetOrder(context.Background(), o.ID)
			if cur.Customer != "Katherine G. Johnson" || cur.Notes != "call before delivery" || cur.Version != 4 ||
				len(cur.Items) != 2 || cur.Items[0].Quantity != 3 || cur.Items[1].Name != "Eraser" {
				t.Errorf("after save mine: %+v, want the person's edit at version 4", cur)
			}
		})
	}
}

// TestInlineEditConflict: the same in a list row — the row's fields,
// yours and theirs, and both choices in the row.
func TestInlineEditConflict(t *testing.T) {
	e := start(t, true)
	o := e.seed(t, "Frances Allen")[0]
	row := "#order-row-1"
	edit := func(what, other string) {
		t.Helper()
		e.do(t, what+": open the row form",
			chromedp.Navigate(e.base+"/orders"),
			chromedp.Click(css(row+" a[hx-get]")),
			chromedp.WaitVisible(css("#row-1-customer")),
			chromedp.SetValue(css("#row-1-customer"), "Frances E. Allen"),
		)
		status := "confirmed"
		if _, err := e.store.UpdateOrder(context.Background(), o.ID, store.OrderInput{Customer: &other, Status: &status}, 0); err != nil {
			t.Fatal(err)
		}
		e.do(t, what+": save the stale row", chromedp.Click(css(row+" .row-buttons button[type=submit]")), chromedp.WaitVisible(css("#conflict-1")))
	}
	edit("first", "F. Allen (IBM)")
	e.shot(t, "conflict-row")
	wantRows(t, "the row's differences", e.rowsText(t, "#conflict-1-fields"), []string{
		"Customer | Frances E. Allen | F. Allen (IBM)",
		"Status | Pending A confirmed order cannot become pending: saving keeps Confirmed. | Confirmed",
	})
	if got := run(t, e, "row customer", chromedp.Value(css("#row-1-customer"))); got != "Frances E. Allen" {
		t.Errorf("after the conflict the row holds %q, want what the person typed", got)
	}
	// Keep theirs: the row's form again, with the stored values.
	e.do(t, "keep theirs", chromedp.Click(css("#conflict-1 a.button")), chromedp.WaitNotPresent(css("#conflict-1")), chromedp.WaitVisible(css("#row-1-customer")))
	if got := run(t, e, "row customer", chromedp.Value(css("#row-1-customer"))); got != "F. Allen (IBM)" {
		t.Errorf("keep theirs: the row holds %q, want theirs", got)
	}
	if cur, _ := e.store.GetOrder(context.Background(), o.ID); cur.Version != 2 {
		t.Errorf("keep theirs saved something: version %d", cur.Version)
	}
	// Save mine over theirs.
	e.do(t, "cancel", chromedp.Click(css(row+" .row-buttons a")), chromedp.WaitNotPresent(css("#row-1-customer")))
	edit("second", "Fran Allen")
	e.do(t, "save mine", chromedp.Click(css("#conflict-1 button[type=submit]")), chromedp.WaitNotPresent(css("#row-1-customer")))
	e.waitText(t, row, "Frances E. Allen")
	e.waitText(t, "#notice", "Order 1 saved.")
	if cur, _ := e.store.GetOrder(context.Background(), o.ID); cur.Customer != "Frances E. Allen" || cur.Status != store.Confirmed || cur.Version != 4 {
		t.Errorf("after save mine: %+v, want the row's customer at version 4", cur)
	}
}
