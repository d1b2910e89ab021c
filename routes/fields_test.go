package routes

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// TestFormAndJSONReadAlike: the same order sent as a form and as JSON is
// the same input, field for field (both decoders walk one table).
func TestFormAndJSONReadAlike(t *testing.T) {
	cases := []struct {
		name string
		form [][2]string
		json string
	}{
		{"every field",
			[][2]string{{"customer", "Ada"}, {"email", "ada@example.com"}, {"status", "confirmed"}, {"currency", "eur"},
				{"notes", "two\nlines"}, {"version", "3"}, {"items", ""},
				{"items[0][sku]", "MUG-1"}, {"items[0][name]", "Mug"}, {"items[0][quantity]", "2"}, {"items[0][unit_price]", "3.50"},
				{"items[1][name]", "Pen"}, {"items[1][quantity]", "10"}, {"items[1][unit_price]", "0.25"}},
			`{"customer":"Ada","email":"ada@example.com","status":"confirmed","currency":"eur","notes":"two\nlines","version":3,
			  "items":[{"sku":"MUG-1","name":"Mug","quantity":2,"unit_price":"3.50"},{"name":"Pen","quantity":"10","unit_price":0.25}]}`},
		{"one field: the others are kept", [][2]string{{"notes", ""}}, `{"notes":""}`},
		{"no items", [][2]string{{"customer", "B"}, {"items", ""}}, `{"customer":"B","items":[]}`},
	}
	for _, c := range cases {
		fromForm, err := decodeForm(c.form)
		if err != nil {
			t.Fatalf("%s: form: %v", c.name, err)
		}
		fromJSON, err := decodeJSON([]byte(c.json))
		if err != nil {
			t.Fatalf("%s: JSON: %v", c.name, err)
		}
		if !reflect.DeepEqual(fromForm, fromJSON) {
			t.Errorf("%s: the form reads as\n%s\nbut the JSON as\n%s", c.name, dump(fromForm), dump(fromJSON))
		}
	}
}

func dump(in orderIn) string {
	s := func(p *string) string {
		if p == nil {
			return "(not sent)"
		}
		return fmt.Sprintf("%q", *p)
	}
	v := "(not sent)"
	if in.Version != nil {
		v = fmt.Sprint(*in.Version)
	}
	return fmt.Sprintf("customer %s email %s status %s currency %s notes %s version %s items %v (sent: %v)",
		s(in.Customer), s(in.Email), s(in.Status), s(in.Currency), s(in.Notes), v, in.Items, in.HasItems)
}

// TestJSONWrongTypeNamesTheField: a JSON value of the wrong type is a 400
// that names the field as every validation error does (items[N][field])
// and says what it must be.
func TestJSONWrongTypeNamesTheField(t *testing.T) {
	for body, want := range map[string]string{
		`{"customer":5}`:                                    "field customer: must be a string",
		`{"customer":"A","customer":["B"]}`:                 "field customer: must be a string",
		`{"items":{"0":{}}}`:                                "field items: must be an array",
		`{"items":[{}, 7]}`:                                 "field items[1]: must be an object",
		`{"items":[{"name":5}]}`:                            "field items[0][name]: must be a string",
		`{"items":[{}, {"quantity":true}]}`:                 "field items[1][quantity]: must be a number",
		`{"items":[{"unit_price":{}}]}`:                     `field items[0][unit_price]: must be a decimal string like "19.99"`,
		`{"version":"3"}`:                                   "field version: must be a whole number",
		`{"version":1.5}`:                                   "field version: must be a whole number",
		`{"version":0}`:                                     "version must be a whole number from 1",
		`{"status":1,"notes":2}`:                            "field status: must be a string",
		`{"items":[` + strings.Repeat(`{},`, 1000) + `{}]}`: "too many items",
	} {
		_, err := decodeJSON([]byte(body))
		var fe *fiber.Error
		if !errors.As(err, &fe) || fe.Code != fiber.StatusBadRequest || fe.Message != want {
			t.Errorf("%.60s: got %v, want a 400 saying %q", body, err, want)
		}
	}
}

// TestFormControlsTakeTheStoreLimits: each control of the order form stops
// typing where the store would refuse (its maxlength is the store's
// limit), and the item rows' table says how many rows app.js may add.
func TestFormControlsTakeTheStoreLimits(t *testing.T) {
	v, err := newViews(os.DirFS(".."), TemplateFuncs(), []string{layoutBare}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := v.Render(&b, "partials/orders/form", &view{Form: newOrderForm(nil)}, layoutBare); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for id, limit := range map[string]int{
		"customer": store.MaxCustomer, "email": store.MaxEmail, "currency": store.CurrencyLen, "notes": store.MaxNotes,
		"items-0-sku": store.MaxSKU, "items-0-name": store.MaxItemName,
	} {
		tag := regexp.MustCompile(`<(input|textarea)[^>]* id="` + id + `"[^>]*>`).FindString(html)
		if want := fmt.Sprintf(`maxlength="%d"`, limit); !strings.Contains(tag, want) {
			t.Errorf("control %s: got %q, want %s", id, tag, want)
		}
	}
	if want := fmt.Sprintf(`<tbody id="item-rows" data-max-rows="%d" data-rows-key="items"`, store.MaxItems); !strings.Contains(html, want) {
		t.Errorf("the item rows' table lacks %s", want)
	}
}

// TestDottedFieldsAreAJSONObject: a field named address.city is the form
// key address.city and the JSON member city of the object address; the
// description says the object.
func TestDottedFieldsAreAJSONObject(t *testing.T) {
	type in struct{ Name, City, Country *string }
	fs := fields[in]{
		{Name: "name", text: func(v *in) **string { return &v.Name }},
		{Name: "address.city", Max: 80, text: func(v *in) **string { return &v.City }},
		{Name: "address.country", text: func(v *in) **string { return &v.Country }},
	}
	var fromForm, fromJSON in
	if err := fs.fromForm(&fromForm, [][2]string{{"name", "Ada"}, {"address.city", "Paris"}}); err != nil {
		t.Fatal(err)
	}
	if err := fs.fromJSON(&fromJSON, []byte(`{"name":"Ada","address":{"city":"Paris"}}`), ""); err != nil {
		t.Fatal(err)
	}
	if fromJSON.City == nil || *fromJSON.City != "Paris" || fromJSON.Country != nil || !reflect.DeepEqual(fromForm, fromJSON) {
		t.Errorf("the form reads %+v, the JSON %+v", fromForm, fromJSON)
	}
	var none in
	if err := fs.fromJSON(&none, []byte(`{"address":null}`), ""); err != nil || none.City != nil {
		t.Errorf("address null: %v %+v", err, none)
	}
	if err := fs.fromJSON(&none, []byte(`{"address":"Paris"}`), ""); err == nil {
		t.Error("an address that is no object was taken")
	}
	if err := fs.fromJSON(&none, []byte(`{"address":{"city":7}}`), ""); err == nil {
		t.Error("a city that is no string was taken")
	}
	d := &apiDoc{schemas: obj{}}
	s := d.inputSchema(describeFields(fs), nil, false)
	addr, _ := s["properties"].(obj)["address"].(obj)
	if addr == nil || addr["properties"].(obj)["city"].(obj)["maxLength"] != 80 {
		t.Errorf("the description of address: %v", s)
	}
}
