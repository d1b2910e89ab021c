package routes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

func badRequest(format string, args ...any) error {
	return fiber.NewError(fiber.StatusBadRequest, fmt.Sprintf(format, args...))
}

// orderFields are the fields of an order as requests send them (CONTRACT
// §1, §2), in the order the forms show them. The limits are the store's.
var orderFields = fields[store.Input]{
	{Name: "customer", Label: "Customer", Max: store.MaxCustomer, UI: control{Required: true},
		text: func(in *store.Input) **string { return &in.Customer }},
	{Name: "email", Label: "Email", Max: store.MaxEmail, UI: control{Type: "email", Optional: true, Class: "field-email"},
		text: func(in *store.Input) **string { return &in.Email }},
	{Name: "status", Label: "Status", UI: control{Tag: "select", OwnSentence: true},
		text: func(in *store.Input) **string { return &in.Status }},
	{Name: "currency", Label: "Currency", Max: store.CurrencyLen,
		UI:   control{Required: true, Size: store.CurrencyLen + 1, Pattern: fmt.Sprintf("[A-Za-z]{%d}", store.CurrencyLen)},
		text: func(in *store.Input) **string { return &in.Currency }},
	{Name: "notes", Label: "Notes", Max: store.MaxNotes, UI: control{Tag: "textarea", Rows: 3, Optional: true},
		text: func(in *store.Input) **string { return &in.Notes }},
	{Name: "version", Kind: kindVersion, version: func(in *store.Input) **int64 { return &in.Version }},
	{Name: "items", Label: "Items", Kind: kindRows, rows: &rows[store.Input, store.ItemInput]{
		fields: itemFields, Noun: "item", Limit: 10 * store.MaxItems,
		newRow: func(n int) store.ItemInput { return store.ItemInput{Index: n} },
		set: func(in *store.Input, items []store.ItemInput) {
			in.Items, in.HasItems = items, items != nil
		},
	}},
}

// itemFields are the fields of one item row.
var itemFields = fields[store.ItemInput]{
	// Typing in the SKU or the name suggests products; choosing one copies
	// its SKU, name and unit price into the row (the order keeps copies).
	{Name: "sku", Label: "SKU", Max: store.MaxSKU, UI: control{Size: 8, FromProduct: "sku", Suggest: productResource.Path()},
		cell: func(it *store.ItemInput) *string { return &it.SKU }},
	{Name: "name", Label: "Name", Max: store.MaxItemName, UI: control{FromProduct: "name", Suggest: productResource.Path()},
		cell: func(it *store.ItemInput) *string { return &it.Name }},
	{Name: "quantity", Label: "Quantity", Kind: kindNumber, UI: control{InputMode: "numeric", Size: 5},
		cell: func(it *store.ItemInput) *string { return &it.Quantity }},
	{Name: "unit_price", Label: "Unit price", Kind: kindMoney, UI: control{InputMode: "decimal", Size: 8, FromProduct: "unit_price"},
		cell: func(it *store.ItemInput) *string { return &it.UnitPrice }},
}

// decodeInput reads an order's create or update request.
func decodeInput(c *fiber.Ctx) (store.Input, error) { return decodeBody(c, orderFields) }

// decodeBody reads a create or update request of a resource whose fields
// are fs, by its Content-Type.
func decodeBody[T any](c *fiber.Ctx, fs fields[T]) (T, error) {
	var in T
	var kv [][2]string
	switch mediaType(c.Get(fiber.HeaderContentType)) {
	case fiber.MIMEApplicationJSON:
		// The raw body: c.Body() would inflate a Content-Encoding
		// (checkFraming refuses those first).
		obj, err := jsonObject(c.Request().Body())
		if err != nil {
			return in, err
		}
		err = fs.fromJSON(&in, obj, "")
		return in, err
	case fiber.MIMEApplicationForm:
		c.Request().PostArgs().VisitAll(func(k, v []byte) {
			kv = append(kv, [2]string{string(k), string(v)})
		})
	case fiber.MIMEMultipartForm:
		form, err := c.MultipartForm()
		if err != nil {
			return in, badRequest("the multipart form cannot be read")
		}
		for k, vs := range form.Value {
			for _, v := range vs {
				kv = append(kv, [2]string{k, v})
			}
		}
	default:
		return in, fiber.NewError(fiber.StatusUnsupportedMediaType,
			"send application/json, application/x-www-form-urlencoded or multipart/form-data")
	}
	err := fs.fromForm(&in, kv)
	return in, err
}

// decodeForm reads an order's form fields (CONTRACT §2).
func decodeForm(kv [][2]string) (store.Input, error) {
	var in store.Input
	err := orderFields.fromForm(&in, kv)
	return in, err
}

// decodeJSON reads an order as a JSON object with the field names of
// CONTRACT §1. Syntax errors and wrong types are 400; values are checked
// by the store.
func decodeJSON(body []byte) (store.Input, error) {
	var in store.Input
	obj, err := jsonObject(body)
	if err != nil {
		return in, err
	}
	err = orderFields.fromJSON(&in, obj, "")
	return in, err
}

// jsonObject checks that body is one JSON object and nothing else, in UTF-8.
func jsonObject(body []byte) (json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil, badRequest("the body must be a JSON object")
	}
	// encoding/json turns invalid UTF-8 into U+FFFD without an error, which
	// would store mangled text; JSON must be UTF-8 (RFC 8259 §8.1).
	if !utf8.Valid(body) {
		return nil, badRequest("the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var obj json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return nil, errNotJSON
	}
	// More is false before a stray '}' or ']', so ask for the next token:
	// only the end of the body may follow the object.
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("the body must hold one JSON object")
	}
	return obj, nil
}
