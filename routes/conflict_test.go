package routes

// The 409: yours beside theirs, field
// by field and item by item, only what differs, and both ways on.

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"orders/store"
	"orders/testutil"
)

func TestConflictDiff(t *testing.T) {
	str := func(s string) *string { return &s }
	cur := &store.Order{ID: 7, Customer: "K. Johnson (NASA)", Email: "kj@nasa.gov", Status: store.Pending,
		Currency: "USD", Notes: "line 1\nline 2", Version: 3, Items: []store.Item{
			{SKU: "MUG-1", Name: "Enamel mug", Quantity: 2, UnitPrice: 1250, LineTotal: 2500},
			{SKU: "PEN-2", Name: "Gel pen", Quantity: 10, UnitPrice: 105, LineTotal: 1050},
			{Name: "Chalk", Quantity: 3, UnitPrice: 40, LineTotal: 120},
			{Name: "Sticker", Quantity: 1, UnitPrice: 99, LineTotal: 99},
		}, Total: 3769}
	in := store.OrderInput{Customer: str(" Katherine Johnson "), Email: str("kj@nasa.gov"), Status: str("Pending"),
		Currency: str("usd"), Notes: str("line 1\r\nline 2\r\n"), HasItems: true, Items: []store.ItemInput{
			{SKU: "mug-1", Name: "Enamel mug", Quantity: "3", UnitPrice: "12.5"}, // quantity changed
			{Name: "Chalk", Quantity: "3", UnitPrice: "0.40"},                    // the same
			{Name: "sticker", Quantity: "1", UnitPrice: "0.99"},                  // renamed
			{SKU: "BAG-9", Name: "Tote bag", Quantity: "1", UnitPrice: "7"},      // only in yours
		}} // Gel pen: only in theirs
	c := newConflict(cur, in, false)
	if len(c.Fields) != 1 || c.Fields[0] != (fieldDiff{Name: "customer", Label: "Customer", Yours: "Katherine Johnson", Theirs: "K. Johnson (NASA)"}) {
		t.Errorf("fields: got %+v, want only the customer (email, status, currency and notes are the same once normalised)", c.Fields)
	}
	type row struct {
		yours, theirs string
		marks         string
	}
	side := func(s *itemSide) string {
		if s == nil {
			return "-"
		}
		return s.SKU + "|" + s.Name + "|" + s.Quantity + "|" + s.UnitPrice + "|" + s.LineTotal
	}
	var got []row
	for _, d := range c.Items {
		m := ""
		for flag, name := range map[*bool]string{&d.SKU: "sku ", &d.Name: "name ", &d.Quantity: "qty ", &d.UnitPrice: "price "} {
			if *flag {
				m += name
			}
		}
		got = append(got, row{side(d.Yours), side(d.Theirs), strings.Join(sortedFields(m), " ")})
	}
	want := []row{
		{"mug-1|Enamel mug|3|12.50|37.50", "MUG-1|Enamel mug|2|12.50|25.00", "qty sku"},
		{"-", "PEN-2|Gel pen|10|1.05|10.50", ""},
		{"|sticker|1|0.99|0.99", "|Sticker|1|0.99|0.99", "name"},
		{"BAG-9|Tote bag|1|7.00|7.00", "-", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("items: got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("item row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if c.YoursTotal != "46.69" {
		t.Errorf("yours total: got %q, want 46.69", c.YoursTotal)
	}

	// The same items in another order: said so, nothing else.
	same := store.OrderInput{HasItems: true, Items: []store.ItemInput{
		{Name: "Chalk", Quantity: "3", UnitPrice: "0.40"}, {Name: "Sticker", Quantity: "1", UnitPrice: "0.99"},
		{SKU: "MUG-1", Name: "Enamel mug", Quantity: "2", UnitPrice: "12.50"}, {SKU: "PEN-2", Name: "Gel pen", Quantity: "10", UnitPrice: "1.05"}}}
	if c := newConflict(cur, same, false); len(c.Items) != 0 || !c.Reordered || !c.Differs() {
		t.Errorf("reordered items: got items %+v reordered %v", c.Items, c.Reordered)
	}
	// Nothing sent differs: no rows, and Differs says so.
	if c := newConflict(cur, store.OrderInput{Email: str("kj@nasa.gov")}, true); c.Differs() || !c.Row {
		t.Errorf("an equal email: got %+v, want no differences", c)
	}
	bad := store.OrderInput{HasItems: true, Items: []store.ItemInput{{SKU: "MUG-1", Name: "Enamel mug", Quantity: "two", UnitPrice: "12.50"}}}
	// Items sent for an order theirs has shipped: listed, and said to stay theirs.
	shipped := *cur
	shipped.Status = store.Shipped
	if c := newConflict(&shipped, bad, false); !c.ItemsFrozen || len(c.Items) == 0 {
		t.Errorf("items sent to a shipped order: got frozen %v items %+v, want the note and the rows", c.ItemsFrozen, c.Items)
	}
	// Unreadable numbers show as typed, marked, with no line total.
	c = newConflict(cur, bad, false)
	if len(c.Items) == 0 || c.Items[0].Yours == nil || c.Items[0].Yours.Quantity != "two" || c.Items[0].Yours.LineTotal != "" || !c.Items[0].Quantity || c.YoursTotal != "" {
		t.Errorf("an unreadable quantity: got %+v (total %q)", c.Items, c.YoursTotal)
	}
}

func sortedFields(s string) []string {
	w := strings.Fields(s)
	for i := range w {
		for j := i + 1; j < len(w); j++ {
			if w[j] < w[i] {
				w[i], w[j] = w[j], w[i]
			}
		}
	}
	return w
}

var conflictTagRE = regexp.MustCompile(`<[^>]+>`)

// text is the body's text without tags, with spaces collapsed.
func plainText(html string) string {
	return strings.Join(strings.Fields(conflictTagRE.ReplaceAllString(html, " ")), " ")
}

// section returns the element with the given id (its start tag to the
// first closing tag of its kind after it: enough for the conflict panel,
// which holds no nested section).
func elementByID(html, id string) string {
	i := strings.Index(html, `<section id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(html[i:], "</section>")
	if j < 0 {
		return html[i:]
	}
	return html[i : i+j+len("</section>")]
}

// TestConflictView: a stale full form and a stale inline row edit answer
// 409 with yours and theirs side by side, only what differs, and the two
// choices; each choice does what it says and nothing silently.
func TestConflictView(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		o := a.create(t, map[string]any{"customer": "Katherine Johnson", "email": "kj@nasa.gov",
			"items": []any{item("Slide rule", 1, "30.00"), item("Pencil", 12, "0.25")}})
		// Theirs: another person renames the customer and changes an item.
		a.update(t, o.ID, map[string]any{"customer": "K. Johnson (NASA)",
			"items": []any{item("Slide rule", 2, "30.00"), item("Pencil", 12, "0.25")}})
		id := itoa(o.ID)
		mine := func(extra ...string) testutil.Body {
			kv := []string{"_method", "PUT", "version", "1", "customer", "Katherine G. Johnson", "email", "kj@nasa.gov",
				"status", "pending", "currency", "USD", "notes", "call first", "items", "",
				"items[0][name]", "Slide rule", "items[0][quantity]", "1", "items[0][unit_price]", "30.00",
				"items[1][name]", "Eraser", "items[1][quantity]", "1", "items[1][unit_price]", "0.50"}
			return testutil.Form(append(kv, extra...)...)
		}
		for _, m := range []struct {
			name string
			h    testutil.H
			page bool
		}{{"plain", testutil.HPage, true}, {"htmx", testutil.HXTo("main#main"), false}} {
			r := a.do(t, http.MethodPost, path(o.ID), mine(), m.h).WantStatus(t, http.StatusConflict).WantNegotiated(t)
			if m.page {
				r.WantPage(t, "order-form")
			} else {
				r.WantFragment(t, "order-form")
			}
			panel := elementByID(r.Body, "conflict-"+id)
			if panel == "" {
				t.Fatalf("%s: no conflict panel; body:\n%s", r.What, testutil.Snippet(r.Body))
			}
			got := plainText(panel)
			for _, want := range []string{
				"Someone else changed order " + id, "now version 2",
				// Fields: only customer and notes differ.
				"Fields that differ Field Yours Theirs",
				"Customer Katherine G. Johnson K. Johnson (NASA)",
				"Notes call first empty",
				// Items, by item: changed, only theirs, only yours; totals.
				"Items that differ Item Yours Theirs",
				"Slide rule 1 × 30.00 = 30.00 2 × 30.00 = 60.00",
				"Pencil Not in yours 12 × 0.25 = 3.00",
				"Eraser 1 × 0.50 = 0.50 Not in theirs",
				"Total 30.50 63.00",
				"Save mine over theirs", "Keep theirs",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("%s: the conflict panel does not say %q; it says:\n%s", r.What, want, got)
				}
			}
			for _, same := range []string{"Email", "Status", "Currency"} {
				if strings.Contains(got, same+" ") && strings.Contains(panel, `data-field="`+strings.ToLower(same)+`"`) {
					t.Errorf("%s: the panel lists %s, which did not change", r.What, same)
				}
			}
			// The changed quantity is marked, not by colour alone.
			if !strings.Contains(panel, "<mark>1</mark>") || !strings.Contains(panel, "<mark>2</mark>") {
				t.Errorf("%s: the differing quantities are not marked:\n%s", r.What, panel)
			}
			// Keep mine submits the form (which now names the stored
			// version); keep theirs opens the stored order's form.
			r.WantContains(t, `<button type="submit" form="order-edit">Save mine over theirs</button>`,
				`<a class="button secondary" href="/orders/`+id+`/edit">Keep theirs</a>`,
				`name="version" value="2"`, `value="Katherine G. Johnson"`, `value="Eraser"`)
			// The old summary is gone.
			r.WantLacks(t, "total 63.00 USD", "Save again to overwrite")
		}
		if got := a.fetch(t, o.ID); got.Customer != "K. Johnson (NASA)" || got.Version != 2 {
			t.Fatalf("after the 409s: %+v, want theirs untouched at version 2", got)
		}

		// Keep theirs: the form with the stored values and version.
		a.get(t, path(o.ID, "/edit"), testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, `value="K. Johnson (NASA)"`, `name="version" value="2"`, `value="Pencil"`).WantLacks(t, "Save mine over theirs")

		// Keep mine: the same input with the stored version, deliberately.
		r := a.do(t, http.MethodPost, path(o.ID), mine("version", "ignored: the first version wins"), testutil.HPage)
		r.WantStatus(t, http.StatusConflict) // the stale version the form first carried
		kept := strings.Replace(string(mine().Data), "version=1", "version=2", 1)
		a.do(t, http.MethodPost, path(o.ID), testutil.Raw(mine().Type, kept), testutil.HPage).WantStatus(t, http.StatusSeeOther)
		if got := a.fetch(t, o.ID); got.Customer != "Katherine G. Johnson" || got.Version != 3 || len(got.Items) != 2 || got.Items[1].Name != "Eraser" {
			t.Errorf("after keep mine: %+v, want mine at version 3", got)
		}

		// The inline row edit: the fields the row sends, its own choices.
		row := "tr#" + rowID(o.ID)
		r = a.do(t, http.MethodPut, path(o.ID), testutil.Form("version", "2", "customer", "Kathy", "email", "kj@nasa.gov", "status", "confirmed"), testutil.HXTo(row))
		r.WantStatus(t, http.StatusConflict)
		panel := plainText(elementByID(r.Body, "conflict-"+id))
		for _, want := range []string{"now version 3", "Customer Kathy Katherine G. Johnson", "Status Confirmed Pending", "Save mine over theirs", "Keep theirs"} {
			if !strings.Contains(panel, want) {
				t.Errorf("%s: the row's conflict does not say %q; it says:\n%s", r.What, want, panel)
			}
		}
		if strings.Contains(panel, "Email") || strings.Contains(panel, "Items that differ") {
			t.Errorf("%s: the row's conflict lists what the row did not change or send:\n%s", r.What, panel)
		}
		r.WantContains(t, `<button type="submit" class="small">Save mine over theirs</button>`,
			`hx-get="/orders/`+id+`/edit" hx-target="closest tr" hx-swap="outerHTML">Keep theirs</a>`,
			`name="version" value="3"`, `value="Kathy"`)

		// JSON keeps its shape: the error and the stored order.
		var e errorJSON
		a.do(t, http.MethodPut, path(o.ID), testutil.JSON(map[string]any{"customer": "J", "version": 1}), testutil.HJSON).
			WantStatus(t, http.StatusConflict).JSON(t, &e)
		if e.Error == "" || e.Current == nil || e.Current.Version != 3 || e.Current.Customer != "Katherine G. Johnson" {
			t.Errorf("JSON 409: got %+v, want error and current at version 3", e)
		}
	})
}
