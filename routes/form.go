package routes

import (
	"html/template"
	"strconv"
	"strings"

	"orders/store"
)

// orderForm is the New and Edit form, and the inline row form: the values
// shown (the stored ones, or what the person typed), and the errors.
type orderForm struct {
	formState[orderIn]
	// R is the order resource: the form's id, its Cancel link.
	R       *resource
	New     bool
	ID      int64
	Action  string
	Version int64
	Items   []itemForm
	// Conflict is set when the person's version was stale: the stored
	// order and how it differs from what they sent (conflict.go).
	Conflict *conflictView
	// StatusOptions are the current status and those it may move to.
	StatusOptions []store.Status
	ItemsEditable bool
}

// itemForm is one item row of the form: its N (items[N][...]) and its
// fields as typed.
type itemForm struct {
	N      int
	values itemRow
	// currency is the form's: it says how many decimals a price has.
	currency string
}

// Number is the row's number as people count: N+1.
func (it itemForm) Number() int { return it.N + 1 }

func newOrderForm(o *store.Order) *orderForm {
	f := &orderForm{R: orderResource, New: o == nil, Action: orderResource.Path(), StatusOptions: []store.Status{store.Pending}, ItemsEditable: true}
	f.fields = orderFields
	pending, usd := string(store.Pending), "USD"
	f.values = orderIn{OrderInput: store.OrderInput{Status: &pending, Currency: &usd}}
	if o != nil {
		f.ID = o.ID
		f.Action = orderResource.MemberPath(o.ID)
		f.values = orderInput(o)
		f.Version = o.Version
		f.StatusOptions = append([]store.Status{o.Status}, o.Status.Next()...)
		f.ItemsEditable = o.Status.ItemsEditable()
		f.setItems(f.values.rows())
	}
	if f.ItemsEditable {
		f.addBlankRows(1)
	}
	return f
}

// orderInput is a stored order as the request that would set every one
// of its fields: what an Edit form starts from.
func orderInput(o *store.Order) orderIn {
	text := func(s string) *string { return &s }
	in := orderIn{OrderInput: store.OrderInput{Customer: text(o.Customer), Email: text(o.Email), Status: text(string(o.Status)),
		Currency: text(o.Currency), Notes: text(o.Notes), CustomerID: text(customerRef(o.CustomerID)),
		HasItems: true, Items: make([]store.ItemInput, len(o.Items))}}
	for i, it := range o.Items {
		in.Items[i] = store.ItemInput{SKU: it.SKU, Name: it.Name,
			Quantity: strconv.FormatInt(it.Quantity, 10), UnitPrice: it.UnitPrice.In(o.Currency)}
	}
	return in
}

// fill puts what a request sent over the form's values, so a form that is
// shown again keeps everything the person typed.
func (f *orderForm) fill(in orderIn) {
	f.formState.fill(in)
	if in.Version != nil {
		f.Version = *in.Version
	}
	if in.HasItems && f.ItemsEditable {
		f.setItems(in.rows())
		f.addBlankRows(1)
	}
}

// setErrors shows the messages of a 422.
func (f *orderForm) setErrors(errs map[string]string) { f.Errors = errs }

// setConflict shows a 409's comparison and takes the stored version.
func (f *orderForm) setConflict(c *conflictView, version int64) { f.Conflict, f.Version = c, version }

// setItems makes the item rows those of rows.
func (f *orderForm) setItems(rows []itemRow) {
	f.Items = f.Items[:0]
	for _, r := range rows {
		f.Items = append(f.Items, itemForm{N: r.n, values: r, currency: f.currency()})
	}
}

// Digits is the number of decimals of the form's currency, for app.js's
// preview of the totals.
func (f *orderForm) Digits() int {
	d, _ := store.CurrencyDigits(f.currency())
	return d
}

// currency is the currency the form shows (perhaps as typed, not valid).
func (f *orderForm) currency() string {
	if c := f.values.Currency; c != nil {
		return strings.ToUpper(strings.TrimSpace(*c))
	}
	return "USD"
}

// Field is the view of a field of the New or Edit form.
func (f *orderForm) Field(name string) fieldView { return f.orderControl(f.field(name, "")) }

// RowField is the view of a field of a list row's inline form.
func (f *orderForm) RowField(name string) fieldView {
	v := f.field(name, "row-"+strconv.FormatInt(f.ID, 10)+"-")
	v.Compact = true
	return f.orderControl(v)
}

// orderControl adds what the order's state says about a control: the
// statuses it may take, a currency that can no longer change, and the
// message of the customer link, whose input is hidden, under the
// customer's name.
func (f *orderForm) orderControl(v fieldView) fieldView {
	switch v.Name {
	case "customer":
		if v.Msg == "" && f.Err("customer_id") != "" {
			v.Msg = f.field("customer_id", "").Msg
		}
	case "status":
		for _, s := range f.StatusOptions {
			v.Options = append(v.Options, option{Value: string(s), Label: statusTitle(s), Selected: string(s) == v.Value})
		}
	case "currency":
		v.Readonly = !f.ItemsEditable
	}
	return v
}

// MaxItems is the most item rows the form offers (app.js reads it from
// the rows' table).
func (f *orderForm) MaxItems() int { return store.MaxItems }

// Row is the view of item row it, for partials/orders/item_row.
func (f *orderForm) Row(it itemForm) itemRowView { return itemRowView{f, it} }

// itemRowView is one item row of a form.
type itemRowView struct {
	Form *orderForm
	Item itemForm
}

// Field is the view of the row's field sub: a table cell's control,
// labelled "SKU of item 3" for screen readers (3 is RowNumber).
func (r itemRowView) Field(sub string) fieldView {
	fd := itemFields.byName(sub)
	key := errKey("items", r.Item.N, sub)
	value, _ := fd.value(&r.Item.values)
	v := fd.view("items-"+strconv.Itoa(r.Item.N)+"-"+sub, key, value, r.Form.Errors[key])
	v.Label += " of item"
	v.RowNumber = r.Item.Number()
	v.HideLabel, v.InCell = true, true
	return v
}

// addBlankRows appends n empty item rows numbered after the last one.
func (f *orderForm) addBlankRows(n int) {
	next := 0
	for _, it := range f.Items {
		next = max(next, it.N+1)
	}
	for i := 0; i < n && len(f.Items) < store.MaxItems; i++ {
		f.Items = append(f.Items, itemForm{N: next + i, values: itemRow{n: next + i}, currency: f.currency()})
	}
}

// lineTotal is the row's quantity × unit price, and whether both are valid
// amounts; a row with neither is blank. The server computes what app.js
// previews, so totals show without JavaScript too.
func (it itemForm) lineTotal() (total store.Money, ok, blank bool) {
	q, p := strings.TrimSpace(it.values.Quantity), strings.TrimSpace(it.values.UnitPrice)
	if q == "" && p == "" {
		return 0, false, true
	}
	n, err := strconv.ParseInt(q, 10, 64)
	if err != nil || n < 1 || n > store.MaxQuantity {
		return 0, false, false
	}
	m, err := store.ParseAmount(p, it.currency)
	if err != nil || m > store.MaxPrice(it.currency) {
		return 0, false, false
	}
	return m.Times(n), true, false
}

// LineTotal is the row's line total as shown, or "–" when it has none.
func (it itemForm) LineTotal() string {
	if t, ok, _ := it.lineTotal(); ok {
		return t.Grouped(it.currency)
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
	return sum.Grouped(f.currency())
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
		return orderResource.NewPath()
	}
	return orderResource.EditPath(f.ID)
}

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

// customerRef is an order's customer id as its form holds it ("": none).
func customerRef(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}
