package routes

import (
	"html/template"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// orderForm is the New and Edit form, and the inline row form: the values
// shown (the stored ones, or what the person typed), and the errors.
type orderForm struct {
	New      bool
	ID       int64
	Action   string
	Customer string
	Email    string
	Status   string
	Currency string
	Notes    string
	Version  int64
	Items    []itemForm
	// Errors maps a field ("customer", "items[3][name]") to its message.
	Errors map[string]string
	// Conflict is set when the person's version was stale: the stored
	// order and how it differs from what they sent (conflict.go).
	Conflict *conflictView
	// StatusOptions are the current status and those it may move to.
	StatusOptions []store.Status
	ItemsEditable bool
}

type itemForm struct {
	N         int
	SKU       string
	Name      string
	Quantity  string
	UnitPrice string
}

// Err returns the message for a field, or "".
func (f *orderForm) Err(field string) string { return f.Errors[field] }

// ItemErr returns the message for field of item row n, or "".
func (f *orderForm) ItemErr(n int, field string) string { return f.Errors[store.ItemKey(n, field)] }

// HasErrors reports whether any field has a message.
func (f *orderForm) HasErrors() bool { return len(f.Errors) > 0 }

func newOrderForm(o *store.Order) *orderForm {
	f := &orderForm{New: o == nil, Action: "/orders", Status: string(store.Pending), Currency: "USD",
		StatusOptions: []store.Status{store.Pending}, ItemsEditable: true}
	if o != nil {
		f.ID = o.ID
		f.Action = "/orders/" + strconv.FormatInt(o.ID, 10)
		f.Customer, f.Email, f.Status, f.Currency, f.Notes = o.Customer, o.Email, string(o.Status), o.Currency, o.Notes
		f.Version = o.Version
		f.StatusOptions = append([]store.Status{o.Status}, o.Status.Next()...)
		f.ItemsEditable = o.Status.ItemsEditable()
		for i, it := range o.Items {
			f.Items = append(f.Items, itemForm{N: i, SKU: it.SKU, Name: it.Name,
				Quantity: strconv.FormatInt(it.Quantity, 10), UnitPrice: it.UnitPrice.String()})
		}
	}
	if f.ItemsEditable {
		f.addBlankRows(1)
	}
	return f
}

// fill puts what a request sent over the form's values, so a form that is
// shown again keeps everything the person typed.
func (f *orderForm) fill(cur *store.Order, in store.Input) {
	set := func(dst *string, p *string) {
		if p != nil {
			*dst = *p
		}
	}
	set(&f.Customer, in.Customer)
	set(&f.Email, in.Email)
	set(&f.Status, in.Status)
	set(&f.Currency, in.Currency)
	set(&f.Notes, in.Notes)
	if in.Version != nil {
		f.Version = *in.Version
	}
	if in.HasItems && f.ItemsEditable {
		f.Items = f.Items[:0]
		for _, it := range in.Items {
			f.Items = append(f.Items, itemForm{N: it.Index, SKU: it.SKU, Name: it.Name, Quantity: it.Quantity, UnitPrice: it.UnitPrice})
		}
		f.addBlankRows(1)
	}
}

// addBlankRows appends n empty item rows numbered after the last one.
func (f *orderForm) addBlankRows(n int) {
	next := 0
	for _, it := range f.Items {
		next = max(next, it.N+1)
	}
	for i := 0; i < n && len(f.Items) < store.MaxItems; i++ {
		f.Items = append(f.Items, itemForm{N: next + i})
	}
}

// lineTotal is the row's quantity × unit price, and whether both are valid
// amounts; a row with neither is blank. The server computes what app.js
// previews, so totals show without JavaScript too.
func (it itemForm) lineTotal() (total store.Money, ok, blank bool) {
	q, p := strings.TrimSpace(it.Quantity), strings.TrimSpace(it.UnitPrice)
	if q == "" && p == "" {
		return 0, false, true
	}
	n, err := strconv.ParseInt(q, 10, 64)
	if err != nil || n < 1 || n > store.MaxQuantity {
		return 0, false, false
	}
	m, err := store.ParseMoney(p)
	if err != nil || m > store.MaxUnitPrice {
		return 0, false, false
	}
	return m.Times(n), true, false
}

// LineTotal is the row's line total as shown, or "–" when it has none.
func (it itemForm) LineTotal() string {
	if t, ok, _ := it.lineTotal(); ok {
		return t.String()
	}
	return "–"
}

// Total is the sum of the rows' line totals, or "–" while a row that is
// not blank has no valid line total (as app.js shows it).
func (f *orderForm) Total() string {
	var sum store.Money
	for _, it := range f.Items {
		t, ok, blank := it.lineTotal()
		if blank {
			continue
		}
		if !ok {
			return "–"
		}
		sum += t
	}
	return sum.String()
}

// removeRow drops item row n (a Remove button without JavaScript); a form
// whose items can change keeps at least one row to type in.
func (f *orderForm) removeRow(n int) {
	kept := f.Items[:0]
	for _, it := range f.Items {
		if it.N != n {
			kept = append(kept, it)
		}
	}
	f.Items = kept
	if len(f.Items) == 0 && f.ItemsEditable {
		f.addBlankRows(1)
	}
}

// RowsAction is where the Add and Remove row buttons send the form without
// JavaScript: the form's own page, which answers with one row more or less.
func (f *orderForm) RowsAction() string {
	if f.New {
		return "/orders/new"
	}
	return f.Action + "/edit"
}

// formNoStore keeps a form out of every cache, the back/forward cache
// included: Back after a save (a plain form's 303) fetches the form again
// with the stored values and version, instead of showing the old ones,
// which a second save would send as a stale edit.
func formNoStore(c *fiber.Ctx) { c.Set(fiber.HeaderCacheControl, "no-store") }

// wbrEmail writes an email address with a line-break opportunity after the
// "@" and before each ".", so a narrow screen breaks it there and never
// inside a word (CSS alone breaks an unbroken address anywhere).
func wbrEmail(addr string) template.HTML {
	var b strings.Builder
	for i, r := range addr {
		if r == '.' && i > 0 {
			b.WriteString("<wbr>")
		}
		b.WriteString(template.HTMLEscapeString(string(r)))
		if r == '@' {
			b.WriteString("<wbr>")
		}
	}
	return template.HTML(b.String())
}
