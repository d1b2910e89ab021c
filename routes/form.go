package routes

import (
	"strconv"

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
