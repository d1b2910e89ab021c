package routes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

func badRequest(format string, args ...any) error {
	return fiber.NewError(fiber.StatusBadRequest, fmt.Sprintf(format, args...))
}

// orderIn is an order's create or update as a request sends it: the
// store's input, and the number each item row had in the request (N of
// items[N][field] in a form, the position in a JSON array). The store
// knows items by their position in Input.Items; requestErrors gives its
// messages back under the keys the request used, so each message lands
// beside the row the person filled in.
type orderIn struct {
	store.OrderInput
	// rowN[i] is the N of Items[i].
	rowN []int
}

// itemRow is one item row as a request sends it: the item and its N.
type itemRow struct {
	store.ItemInput
	n int
}

// requestErrors returns err with the store's item keys (items[i][field],
// i the item's position) written with the row's N instead.
func (in *orderIn) requestErrors(err error) error {
	se, ok := err.(*store.Error)
	if !ok || len(se.Fields) == 0 || len(in.rowN) == 0 {
		return err
	}
	out := *se
	out.Fields = make(map[string]string, len(se.Fields))
	for k, msg := range se.Fields {
		if rest, ok := strings.CutPrefix(k, "items["); ok {
			if i, sub, ok := strings.Cut(rest, "]["); ok {
				if n, err := strconv.Atoi(i); err == nil && n >= 0 && n < len(in.rowN) && strings.HasSuffix(sub, "]") {
					k = errKey("items", in.rowN[n], strings.TrimSuffix(sub, "]"))
				}
			}
		}
		out.Fields[k] = msg
	}
	return &out
}

// rows returns the item rows of in, each with its N.
func (in *orderIn) rows() []itemRow {
	out := make([]itemRow, len(in.Items))
	for i, it := range in.Items {
		out[i] = itemRow{it, i}
		if i < len(in.rowN) {
			out[i].n = in.rowN[i]
		}
	}
	return out
}

// orderFields are the fields of an order as requests send them, under one
// name in forms and JSON, in the order the forms show them. The limits are
// the store's.
var orderFields = fields[orderIn]{
	// Typing in the customer suggests customers; choosing one copies its
	// name and email and links the order to it (customer_id). Typing on
	// after that unlinks it: the text is the order's own.
	{Name: "customer", Label: "Customer", Max: store.MaxCustomer, UI: control{Required: true, FromProduct: "name", Suggest: customerResource},
		text: func(in *orderIn) **string { return &in.Customer }},
	{Name: "email", Label: "Email", Max: store.MaxEmail, UI: control{Type: "email", Optional: true, Class: "field-email", FromProduct: "email"},
		text: func(in *orderIn) **string { return &in.Email }},
	{Name: "customer_id", Label: "Customer number", Kind: kindNumber, UI: control{Pattern: "[0-9]*"}, // "": no customer
		text: func(in *orderIn) **string { return &in.CustomerID }},
	{Name: "status", Label: "Status", HistoryFirst: true, UI: control{Tag: "select", OwnSentence: true},
		text: func(in *orderIn) **string { return &in.Status }},
	{Name: "currency", Label: "Currency", Max: store.CurrencyLen,
		UI:   control{Required: true, Size: store.CurrencyLen + 1, Pattern: fmt.Sprintf("[A-Za-z]{%d}", store.CurrencyLen)},
		text: func(in *orderIn) **string { return &in.Currency }},
	{Name: "notes", Label: "Notes", Max: store.MaxNotes, UI: control{Tag: "textarea", Rows: 3, Optional: true},
		text: func(in *orderIn) **string { return &in.Notes }},
	{Name: "version", Kind: kindVersion, version: func(in *orderIn) **int64 { return &in.Version }},
	{Name: "items", Label: "Items", Kind: kindRows, rows: &rows[orderIn, itemRow]{
		fields: itemFields, Noun: "item", Limit: 10 * store.MaxItems,
		newRow: func(n int) itemRow { return itemRow{n: n} },
		set: func(in *orderIn, rs []itemRow) {
			in.Items, in.rowN, in.HasItems = nil, nil, rs != nil
			if rs == nil {
				return
			}
			in.Items, in.rowN = make([]store.ItemInput, len(rs)), make([]int, len(rs))
			for i, r := range rs {
				in.Items[i], in.rowN[i] = r.ItemInput, r.n
			}
		},
	}},
}

// itemFields are the fields of one item row.
var itemFields = fields[itemRow]{
	// Typing in the SKU or the name suggests products; choosing one copies
	// its SKU, name and unit price into the row (the order keeps copies).
	{Name: "sku", Label: "SKU", Max: store.MaxSKU, UI: control{Size: 8, FromProduct: "sku", Suggest: productResource},
		cell: func(it *itemRow) *string { return &it.SKU }},
	{Name: "name", Label: "Name", Max: store.MaxItemName, UI: control{FromProduct: "name", Suggest: productResource},
		cell: func(it *itemRow) *string { return &it.Name }},
	{Name: "quantity", Label: "Quantity", Kind: kindNumber, UI: control{InputMode: "numeric", Size: 5},
		cell: func(it *itemRow) *string { return &it.Quantity }},
	{Name: "unit_price", Label: "Unit price", Kind: kindMoney, UI: control{InputMode: "decimal", Size: 8, FromProduct: "unit_price"},
		cell: func(it *itemRow) *string { return &it.UnitPrice }},
}

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

// decodeForm reads an order's form fields: customer, email, status,
// currency, notes, version and items[N][field].
func decodeForm(kv [][2]string) (orderIn, error) {
	var in orderIn
	err := orderFields.fromForm(&in, kv)
	return in, err
}

// decodeJSON reads an order as a JSON object with the same field names as
// the form (items as an array of objects). Syntax errors and wrong types are 400; values are checked
// by the store.
func decodeJSON(body []byte) (orderIn, error) {
	var in orderIn
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
	// would store mangled text; JSON must be UTF-8 (RFC 8259, section 8.1).
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
