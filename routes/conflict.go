package routes

import (
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"

	"orders/store"
)

// conflictView is what a 409 (a stale version) shows: the values the person
// sent ("yours") beside the stored ones ("theirs"), only where they differ,
// field by field and item by item, and the two ways on: keep mine (the
// form now carries the stored version, so saving it again replaces theirs
// with what the diff lists) or keep theirs (the form again from the stored
// order). Without a record of the version the person started from, the
// diff cannot say who changed what; it says what saving yours would change.
type conflictView struct {
	// R is the resource: the Keep theirs link, the form Save mine submits.
	R *resource
	// ID and Version are the stored record's: theirs.
	ID, Version int64
	// TheirsTotal is the stored order's total, beside YoursTotal.
	TheirsTotal string
	// FrozenStatus is the stored status when ItemsFrozen.
	FrozenStatus string
	// Row says the conflict is shown in a list row's inline form.
	Row bool
	// Fields are the differing fields, in the form's order.
	Fields []fieldDiff
	// Items are the differing items: theirs in their order (changed or only
	// theirs), then those only in yours.
	Items []itemDiff
	// YoursTotal is the total of the items sent ("" when a quantity or
	// price cannot be read); shown with Current.Total when items differ.
	YoursTotal string
	// Reordered: the same items, in another order.
	Reordered bool
	// ItemsFrozen: the person sent items, but the stored status no longer
	// lets items change; saving theirs keeps the stored items.
	ItemsFrozen bool
}

// Differs reports whether anything the person sent differs from theirs.
func (c *conflictView) Differs() bool { return len(c.Fields) > 0 || len(c.Items) > 0 || c.Reordered }

// fieldDiff is one field whose value differs.
type fieldDiff struct {
	Name   string // the form key: customer, email, ...
	Label  string
	Yours  string
	Theirs string
	// Note says why yours cannot be saved over theirs (a status the
	// stored one cannot move to): the form offers theirs instead.
	Note string
}

// itemDiff is one item that differs: on both sides with other values, or
// on one side only (the other is nil).
type itemDiff struct {
	Yours, Theirs *itemSide
	// Which parts differ, when the item is on both sides.
	SKU, Name, Quantity, UnitPrice bool
}

// Label names the item for the row header: its name (theirs when both have
// one), and its SKU.
func (d itemDiff) Label() string {
	s := d.Theirs
	if s == nil {
		s = d.Yours
	}
	if s.Name == "" && d.Yours != nil {
		s = d.Yours
	}
	if s.SKU != "" {
		return s.Name + " (" + s.SKU + ")"
	}
	return s.Name
}

// itemSide is one item as text: as stored, or as the person typed it
// (normalised where it can be read: "2.5" shows as 2.50).
type itemSide struct {
	SKU, Name, Quantity, UnitPrice string
	LineTotal                      string // "" when it cannot be computed
}

// comparable item: the text and, when readable, the numbers.
type diffItem struct {
	side       itemSide
	qty        int64
	price      store.Money
	qtyOK      bool
	priceOK    bool
	pairedWith int
}

// newConflict compares what the person sent with the stored order.
func newConflict(cur *store.Order, in store.OrderInput, row bool) *conflictView {
	c := &conflictView{R: orderResource, ID: cur.ID, Version: cur.Version, TheirsTotal: cur.Total.Grouped(cur.Currency), Row: row}
	field := func(name string, sent *string, theirs string, norm func(string) string, show func(string) string) {
		if sent == nil {
			return
		}
		yours := norm(*sent)
		if yours == norm(theirs) {
			return
		}
		c.Fields = append(c.Fields, fieldDiff{Name: name, Label: orderFields.byName(name).Label, Yours: show(yours), Theirs: show(theirs)})
	}
	same := func(s string) string { return s }
	field("customer", in.Customer, cur.Customer, normText, same)
	field("email", in.Email, cur.Email, normText, same)
	field("status", in.Status, string(cur.Status), func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }, capitalise)
	if n := len(c.Fields); n > 0 && c.Fields[n-1].Name == "status" {
		if yours := store.Status(strings.ToLower(strings.TrimSpace(*in.Status))); !cur.Status.CanBecome(yours) {
			c.Fields[n-1].Note = "A " + string(cur.Status) + " order cannot become " + string(yours) + ": saving keeps " + capitalise(string(cur.Status)) + "."
		}
	}
	field("currency", in.Currency, cur.Currency, func(s string) string { return strings.ToUpper(strings.TrimSpace(s)) }, same)
	field("notes", in.Notes, cur.Notes, normText, same)
	if in.HasItems {
		c.ItemsFrozen, c.FrozenStatus = !cur.Status.ItemsEditable(), string(cur.Status)
		yoursCode := cur.Currency
		if in.Currency != nil {
			yoursCode = strings.ToUpper(strings.TrimSpace(*in.Currency))
		}
		c.diffItems(cur, in.Items, yoursCode)
	}
	return c
}

// diffItems pairs the person's items with the stored ones: identical items
// first, then the same SKU, then the same name; what is left is on one side
// only.
func (c *conflictView) diffItems(cur *store.Order, sent []store.ItemInput, yoursCode string) {
	theirs := make([]diffItem, len(cur.Items))
	for i, it := range cur.Items {
		theirs[i] = diffItem{side: itemSide{SKU: it.SKU, Name: it.Name, Quantity: strconv.FormatInt(it.Quantity, 10),
			UnitPrice: it.UnitPrice.In(cur.Currency), LineTotal: it.LineTotal.Grouped(cur.Currency)},
			qty: it.Quantity, price: it.UnitPrice, qtyOK: true, priceOK: true, pairedWith: -1}
	}
	yours := make([]diffItem, len(sent))
	var total store.Money
	totalOK := true
	for i, it := range sent {
		d := diffItem{side: itemSide{SKU: strings.TrimSpace(it.SKU), Name: normText(it.Name),
			Quantity: strings.TrimSpace(it.Quantity), UnitPrice: strings.TrimSpace(it.UnitPrice)}, pairedWith: -1}
		if q, err := strconv.ParseInt(d.side.Quantity, 10, 64); err == nil && q >= 0 {
			d.qty, d.qtyOK, d.side.Quantity = q, true, strconv.FormatInt(q, 10)
		}
		if p, err := store.ParseAmount(d.side.UnitPrice, yoursCode); err == nil {
			d.price, d.priceOK, d.side.UnitPrice = p, true, p.In(yoursCode)
		}
		if d.qtyOK && d.priceOK && d.qty <= store.MaxQuantity {
			d.side.LineTotal = d.price.Times(d.qty).Grouped(yoursCode)
			total += d.price.Times(d.qty)
		} else {
			totalOK = false
		}
		yours[i] = d
	}
	if totalOK {
		c.YoursTotal = total.Grouped(yoursCode)
	}
	identical := func(y, t *diffItem) bool {
		return y.side.SKU == t.side.SKU && y.side.Name == t.side.Name && y.qtyOK && y.priceOK &&
			y.qty == t.qty && y.price == t.price
	}
	// Theirs each take one of yours (store.PairBy, as the history pairs
	// items): the same item, then the same SKU, then the same name.
	for i, j := range store.PairBy(len(theirs), len(yours),
		func(i, j int) bool { return identical(&yours[j], &theirs[i]) },
		func(i, j int) bool {
			return theirs[i].side.SKU != "" && strings.EqualFold(yours[j].side.SKU, theirs[i].side.SKU)
		},
		func(i, j int) bool {
			return theirs[i].side.Name != "" && strings.EqualFold(yours[j].side.Name, theirs[i].side.Name)
		}) {
		if j >= 0 {
			theirs[i].pairedWith, yours[j].pairedWith = j, i
		}
	}

	last := -1
	for i := range theirs {
		t := &theirs[i]
		if t.pairedWith < 0 {
			c.Items = append(c.Items, itemDiff{Theirs: &t.side})
			continue
		}
		y := &yours[t.pairedWith]
		if t.pairedWith < last {
			c.Reordered = true
		}
		last = t.pairedWith
		if identical(y, t) {
			continue
		}
		c.Items = append(c.Items, itemDiff{Yours: &y.side, Theirs: &t.side,
			SKU: y.side.SKU != t.side.SKU, Name: y.side.Name != t.side.Name,
			Quantity: !y.qtyOK || y.qty != t.qty, UnitPrice: !y.priceOK || y.price != t.price})
	}
	for j := range yours {
		if yours[j].pairedWith < 0 {
			c.Items = append(c.Items, itemDiff{Yours: &yours[j].side})
		}
	}
	if len(c.Items) > 0 {
		c.Reordered = false // the rows say more than the order does
	}
}

// fieldConflict compares what the person sent (yours) with the stored
// record (theirs, as the input that would set every field) through the
// resource's field table: the 409 of a resource without rows.
func fieldConflict[In any](r *resource, fs fields[In], theirs, yours In, id, version int64, row bool) *conflictView {
	c := &conflictView{R: r, ID: id, Version: version, Row: row}
	for i := range fs {
		f := &fs[i]
		y, sent := f.value(&yours)
		if !sent || f.Kind == kindVersion || f.Kind == kindRows {
			continue
		}
		t, _ := f.value(&theirs)
		if sameValue(f, y, t) {
			continue
		}
		c.Fields = append(c.Fields, fieldDiff{Name: f.Name, Label: f.Label, Yours: normText(y), Theirs: t})
	}
	return c
}

// sameValue reports whether two values of f are the same as the store
// keeps them: amounts by value ("5" is 5.00), text normalised.
func sameValue[T any](f *field[T], a, b string) bool {
	if f.Kind == kindMoney {
		x, err1 := store.ParseMoney(strings.TrimSpace(a))
		y, err2 := store.ParseMoney(strings.TrimSpace(b))
		if err1 == nil && err2 == nil {
			return x == y
		}
	}
	if f.Fold {
		return strings.EqualFold(normText(a), normText(b))
	}
	return normText(a) == normText(b)
}

// normText compares text as the store keeps it: trimmed, NFC, with the
// line breaks a browser sends (CRLF) as the store's.
func normText(s string) string {
	return norm.NFC.String(strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")))
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// diffCell is one side of an itemDiff as a table cell: the item (nil when
// it is not on that side) and which of its parts differ from the other.
type diffCell struct {
	Side  string // yours or theirs: the class, and "Not in yours"
	Title string // Yours or Theirs
	Item  *itemSide
	// Parts to mark: set only when the item is on both sides.
	SKU, Name, Quantity, UnitPrice bool
}

// Cells returns the yours and theirs cells of the row.
func (d itemDiff) Cells() [2]diffCell {
	both := d.Yours != nil && d.Theirs != nil
	cell := func(side, title string, it *itemSide) diffCell {
		c := diffCell{Side: side, Title: title, Item: it}
		if both {
			c.SKU, c.Name, c.Quantity, c.UnitPrice = d.SKU, d.Name, d.Quantity, d.UnitPrice
		}
		return c
	}
	return [2]diffCell{cell("yours", "Yours", d.Yours), cell("theirs", "Theirs", d.Theirs)}
}
