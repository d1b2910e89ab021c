package routes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// maxItemIndex bounds the N of items[N][field]: gaps are allowed, absurd
// numbers are not.
const maxItemIndex = 9999

func badRequest(format string, args ...any) error {
	return fiber.NewError(fiber.StatusBadRequest, fmt.Sprintf(format, args...))
}

// decodeInput reads a create or update request by its Content-Type.
func decodeInput(c *fiber.Ctx) (store.Input, error) {
	switch mediaType(c.Get(fiber.HeaderContentType)) {
	case fiber.MIMEApplicationJSON:
		// The raw body: c.Body() would inflate a Content-Encoding
		// (checkFraming refuses those first).
		return decodeJSON(c.Request().Body())
	case fiber.MIMEApplicationForm:
		var kv [][2]string
		c.Request().PostArgs().VisitAll(func(k, v []byte) {
			kv = append(kv, [2]string{string(k), string(v)})
		})
		return decodeForm(kv)
	case fiber.MIMEMultipartForm:
		form, err := c.MultipartForm()
		if err != nil {
			return store.Input{}, badRequest("the multipart form cannot be read")
		}
		var kv [][2]string
		for k, vs := range form.Value {
			for _, v := range vs {
				kv = append(kv, [2]string{k, v})
			}
		}
		return decodeForm(kv)
	}
	return store.Input{}, fiber.NewError(fiber.StatusUnsupportedMediaType,
		"send application/json, application/x-www-form-urlencoded or multipart/form-data")
}

// decodeForm reads form fields (CONTRACT §2). Item rows whose fields are all
// blank are dropped: a form offers empty rows to fill in.
func decodeForm(kv [][2]string) (store.Input, error) {
	var in store.Input
	items := map[int]*store.ItemInput{}
	set := func(p **string, v string) {
		if *p == nil {
			*p = &v
		}
	}
	for _, f := range kv {
		k, v := f[0], f[1]
		switch k {
		case "customer":
			set(&in.Customer, v)
		case "email":
			set(&in.Email, v)
		case "status":
			set(&in.Status, v)
		case "currency":
			set(&in.Currency, v)
		case "notes":
			set(&in.Notes, v)
		case "items", "items[]":
			in.HasItems = true
		case "version":
			if in.Version != nil {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 1 {
				return in, badRequest("version must be a whole number from 1")
			}
			in.Version = &n
		default:
			if !strings.HasPrefix(k, "items[") {
				continue // _method, buttons and the like
			}
			n, field, ok := parseItemKey(k)
			if !ok {
				return in, badRequest("%q is not a form key this resource knows; items use items[N][field]", k)
			}
			if n > maxItemIndex {
				return in, badRequest("item index %d is out of range (0 to %d)", n, maxItemIndex)
			}
			in.HasItems = true
			it := items[n]
			if it == nil {
				if len(items) >= 10*store.MaxItems {
					return in, badRequest("too many items")
				}
				it = &store.ItemInput{Index: n}
				items[n] = it
			}
			switch field {
			case "sku":
				it.SKU = v
			case "name":
				it.Name = v
			case "quantity":
				it.Quantity = v
			case "unit_price":
				it.UnitPrice = v
			}
		}
	}
	keys := make([]int, 0, len(items))
	for n, it := range items {
		if strings.TrimSpace(it.SKU+it.Name+it.Quantity+it.UnitPrice) == "" {
			continue
		}
		keys = append(keys, n)
	}
	sort.Ints(keys)
	in.Items = make([]store.ItemInput, 0, len(keys))
	for _, n := range keys {
		in.Items = append(in.Items, *items[n])
	}
	return in, nil
}

// parseItemKey reads "items[12][name]".
func parseItemKey(k string) (int, string, bool) {
	rest := strings.TrimPrefix(k, "items[")
	i := strings.IndexByte(rest, ']')
	if i < 1 || i > 6 {
		return 0, "", false
	}
	digits := rest[:i]
	for _, ch := range digits {
		if ch < '0' || ch > '9' {
			return 0, "", false
		}
	}
	n, _ := strconv.Atoi(digits)
	rest = rest[i+1:]
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return 0, "", false
	}
	switch field := rest[1 : len(rest)-1]; field {
	case "sku", "name", "quantity", "unit_price":
		return n, field, true
	}
	return 0, "", false
}

type jsonItem struct {
	SKU       *string         `json:"sku"`
	Name      *string         `json:"name"`
	Quantity  json.RawMessage `json:"quantity"`
	UnitPrice json.RawMessage `json:"unit_price"`
}

type jsonInput struct {
	Customer *string     `json:"customer"`
	Email    *string     `json:"email"`
	Status   *string     `json:"status"`
	Currency *string     `json:"currency"`
	Notes    *string     `json:"notes"`
	Items    *[]jsonItem `json:"items"`
	Version  *int64      `json:"version"`
}

// decodeJSON reads a JSON object with the field names of CONTRACT §1.
// Syntax errors and wrong types are 400; values are checked by the store.
func decodeJSON(body []byte) (store.Input, error) {
	var in store.Input
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return in, badRequest("the body must be a JSON object")
	}
	// encoding/json turns invalid UTF-8 into U+FFFD without an error, which
	// would store mangled text; JSON must be UTF-8 (RFC 8259 §8.1).
	if !utf8.Valid(body) {
		return in, badRequest("the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var j jsonInput
	if err := dec.Decode(&j); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return in, badRequest("field %s: must be %s", te.Field, jsonTypeName(te.Type.String()))
		}
		return in, badRequest("the body is not valid JSON")
	}
	// More is false before a stray '}' or ']', so ask for the next token:
	// only the end of the body may follow the object.
	if _, err := dec.Token(); err != io.EOF {
		return in, badRequest("the body must hold one JSON object")
	}
	in.Customer, in.Email, in.Status, in.Currency, in.Notes = j.Customer, j.Email, j.Status, j.Currency, j.Notes
	if j.Version != nil {
		if *j.Version < 1 {
			return in, badRequest("version must be a whole number from 1")
		}
		in.Version = j.Version
	}
	if j.Items != nil {
		in.HasItems = true
		if len(*j.Items) > 10*store.MaxItems {
			return in, badRequest("too many items")
		}
		for n, it := range *j.Items {
			item := store.ItemInput{Index: n}
			if it.SKU != nil {
				item.SKU = *it.SKU
			}
			if it.Name != nil {
				item.Name = *it.Name
			}
			var err error
			if item.Quantity, err = scalarText(it.Quantity); err != nil {
				return in, badRequest("field items[%d][quantity]: must be a number", n)
			}
			if item.UnitPrice, err = scalarText(it.UnitPrice); err != nil {
				return in, badRequest("field items[%d][unit_price]: must be a decimal string like \"19.99\"", n)
			}
			in.Items = append(in.Items, item)
		}
	}
	return in, nil
}

// scalarText returns a JSON string's value or a JSON number's literal text,
// so numbers are checked as text and never pass through a float.
func scalarText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
		return string(raw), nil
	}
	return "", errors.New("not a scalar")
}

func jsonTypeName(goType string) string {
	switch {
	case strings.Contains(goType, "string"):
		return "a string"
	case strings.Contains(goType, "int"):
		return "a whole number"
	case strings.Contains(goType, "[]"):
		return "an array"
	}
	return "of another type"
}
