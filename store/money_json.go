package store

import "encoding/json"

// The records below carry a currency, and write their amounts in it
// (Money.In): "350" for JPY, "1.234" for BHD. Each marshals a copy of
// itself without methods, with its amounts replaced by their text: a field
// of the outer struct wins over the embedded one of the same JSON name.

// itemJSON is an item with its amounts as text.
type itemJSON struct {
	SKU       string `json:"sku"`
	Name      string `json:"name"`
	Quantity  int64  `json:"quantity"`
	UnitPrice string `json:"unit_price"`
	LineTotal string `json:"line_total"`
}

func itemsJSON(items []Item, code string) []itemJSON {
	out := make([]itemJSON, len(items))
	for i, it := range items {
		out[i] = itemJSON{it.SKU, it.Name, it.Quantity, it.UnitPrice.In(code), it.LineTotal.In(code)}
	}
	return out
}

// MarshalJSON writes the order with its amounts in its currency.
func (o Order) MarshalJSON() ([]byte, error) {
	type plain Order
	items := itemsJSON(o.Items, o.Currency)
	if o.Items == nil {
		items = nil
	}
	return json.Marshal(struct {
		plain
		Items []itemJSON `json:"items"`
		Total string     `json:"total"`
	}{plain(o), items, o.Total.In(o.Currency)})
}

// MarshalJSON writes the summary with its total in its currency.
func (o OrderSummary) MarshalJSON() ([]byte, error) {
	type plain OrderSummary
	return json.Marshal(struct {
		plain
		Total string `json:"total"`
	}{plain(o), o.Total.In(o.Currency)})
}

// MarshalJSON writes the product with its price in its currency.
func (p Product) MarshalJSON() ([]byte, error) {
	type plain Product
	return json.Marshal(struct {
		plain
		UnitPrice string `json:"unit_price"`
	}{plain(p), p.UnitPrice.In(p.Currency)})
}

// MarshalJSON writes the total in its currency.
func (t CurrencyTotal) MarshalJSON() ([]byte, error) {
	type plain CurrencyTotal
	return json.Marshal(struct {
		plain
		Total string `json:"total"`
	}{plain(t), t.Total.In(t.Currency)})
}
