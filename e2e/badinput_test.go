package e2e

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"orders/testutil"

	"github.com/alicebob/miniredis/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
)

// send runs one request through app.Test (testutil.InProcess).
func send(t testing.TB, app *fiber.App, method, target, ctype string, body []byte, h testutil.H) *testutil.Resp {
	t.Helper()
	return testutil.InProcess(app).Do(t, method, target, testutil.Body{Type: ctype, Data: body}, h)
}

const (
	ctJSON = "application/json"
	ctForm = "application/x-www-form-urlencoded"
)

// formOf encodes key, value pairs in order (testutil.Form).
func formOf(kv ...string) []byte { return testutil.Form(kv...).Data }

// multipartOf encodes key, value pairs as multipart/form-data (testutil.Multipart).
func multipartOf(kv ...string) (string, []byte) {
	b := testutil.Multipart(kv...)
	return b.Type, b.Data
}

func item(name string, qty, price any) map[string]any {
	return map[string]any{"name": name, "quantity": qty, "unit_price": price}
}

func manyItems(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = item(fmt.Sprintf("Part %d", i), 1, "1.00")
	}
	return out
}

func manyFormItems(n int) []string {
	var kv []string
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("items[%d]", i)
		kv = append(kv, p+"[name]", "Part", p+"[quantity]", "1", p+"[unit_price]", "1.00")
	}
	return kv
}

// badCase is one malformed request. want 0 means any 4xx; msg, when set,
// must appear in the message.
type badCase struct {
	name, method, path, ctype string
	body                      []byte
	want                      int
	msg                       string
	h                         testutil.H // extra headers
}

func badCases() []badCase {
	var cs []badCase
	add := func(c badCase) { cs = append(cs, c) }
	j := func(name string, v any, want int, msg string) {
		var b []byte
		if s, ok := v.(string); ok {
			b = []byte(s)
		} else {
			b = jsonOf(v)
		}
		add(badCase{name: "POST json " + name, method: http.MethodPost, path: "/orders", ctype: ctJSON, body: b, want: want, msg: msg})
	}
	ju := func(name string, v any, want int, msg string) { // an update of order 1
		var b []byte
		if s, ok := v.(string); ok {
			b = []byte(s)
		} else {
			b = jsonOf(v)
		}
		add(badCase{name: "PUT json " + name, method: http.MethodPut, path: "/orders/1", ctype: ctJSON, body: b, want: want, msg: msg})
	}
	f := func(name string, want int, msg string, kv ...string) {
		add(badCase{name: "POST form " + name, method: http.MethodPost, path: "/orders", ctype: ctForm, body: formOf(kv...), want: want, msg: msg})
	}
	fraw := func(name, method, path, body string, want int, msg string) {
		add(badCase{name: method + " raw form " + name, method: method, path: path, ctype: ctForm, body: []byte(body), want: want, msg: msg})
	}
	mp := func(name, method, path string, want int, msg string, kv ...string) {
		ct, b := multipartOf(kv...)
		add(badCase{name: method + " multipart " + name, method: method, path: path, ctype: ct, body: b, want: want, msg: msg})
	}
	mib := strings.Repeat("x", 1<<20)

	// Too large.
	j("over 1 MiB", `{"customer":"Big","notes":"`+mib+`"}`, 413, "1 MiB")
	f("over 1 MiB", 413, "1 MiB", "customer", "Big", "notes", mib)
	mp("over 1 MiB", http.MethodPut, "/orders/1", 413, "1 MiB", "notes", mib)
	fraw("over 1 MiB of keys", http.MethodPost, "/orders", strings.Repeat("a=b&", 1<<18+10), 413, "1 MiB")

	// Deep nesting and huge arrays.
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	j("10000-deep array as customer", `{"customer":`+deep+`}`, 400, "")
	j("10000-deep object as notes", `{"notes":`+strings.Repeat(`{"a":`, 10000)+"1"+strings.Repeat("}", 10000)+`}`, 400, "")
	j("10000-deep array as the body", deep, 400, "JSON object")
	j("10000-deep array as an item name", `{"customer":"A","items":[{"name":`+deep+`}]}`, 400, "")
	j("200000 empty items", `{"customer":"A","items":[`+strings.TrimSuffix(strings.Repeat("{},", 200000), ",")+`]}`, 400, "too many items")
	j("100000 numbers as customer", `{"customer":[`+strings.TrimSuffix(strings.Repeat("1,", 100000), ",")+`]}`, 400, "")
	j("101 items", map[string]any{"customer": "A", "items": manyItems(101)}, 422, "at most 100 items")
	f("101 items", 422, "at most 100 items", append([]string{"customer", "A"}, manyFormItems(101)...)...)

	// Invalid UTF-8.
	j("invalid UTF-8 in customer", "{\"customer\":\"Ada \xff\xfe\"}", 0, "UTF-8")
	j("invalid UTF-8 in an item name", "{\"customer\":\"Ada\",\"items\":[{\"name\":\"\xc3\x28\",\"quantity\":1,\"unit_price\":\"1\"}]}", 0, "UTF-8")
	j("invalid UTF-8 in a key", "{\"cust\xffomer\":\"Ada\"}", 0, "UTF-8")
	fraw("invalid UTF-8 in customer", http.MethodPost, "/orders", "customer=Ada%FF%FE", 422, "UTF-8")
	fraw("invalid UTF-8 in an item name", http.MethodPost, "/orders", "customer=Ada&items[0][name]=%C3%28&items[0][quantity]=1&items[0][unit_price]=1", 422, "UTF-8")
	mp("invalid UTF-8 in notes", http.MethodPut, "/orders/1", 422, "UTF-8", "notes", "bad \xff")

	// Control characters and NUL bytes.
	j("BEL in customer", map[string]any{"customer": "Ada\a"}, 422, "control characters")
	j("NUL in notes", map[string]any{"customer": "Ada", "notes": "a\x00b"}, 422, "control characters")
	j("ESC in an item name", map[string]any{"customer": "Ada", "items": []any{item("x\x1b[31m", 1, "1")}}, 422, "control characters")
	j("raw NUL after the object", "{\"customer\":\"Ada\"}\x00", 400, "")
	j("raw NUL inside a string", "{\"customer\":\"A\x00da\"}", 400, "")
	j("raw newline inside a string", "{\"customer\":\"A\nda\"}", 400, "")
	f("CR LF in customer", 422, "control characters", "customer", "Ada\r\nBcc: x")
	f("NUL in notes", 422, "control characters", "customer", "Ada", "notes", "a\x00b")
	f("NUL in an item name", 422, "control characters", "customer", "Ada", "items[0][name]", "a\x00", "items[0][quantity]", "1", "items[0][unit_price]", "1")
	mp("DEL in an item name", http.MethodPost, "/orders", 422, "control characters", "customer", "Ada", "items[0][name]", "a\x7f", "items[0][quantity]", "1", "items[0][unit_price]", "1")
	ju("C1 control in customer", map[string]any{"customer": "A\u0085da"}, 422, "control characters")

	// Absurd numbers.
	for _, q := range []string{"1e400", "-1", "99999999999999999999", "0", "1.5", "1000001"} {
		j("quantity "+q, `{"customer":"A","items":[{"name":"x","quantity":`+q+`,"unit_price":"1"}]}`, 422, "whole number")
	}
	f("quantity 1e400", 422, "whole number", "customer", "A", "items[0][name]", "x", "items[0][quantity]", "1e400", "items[0][unit_price]", "1")
	f("quantity ' 0x10'", 422, "whole number", "customer", "A", "items[0][name]", "x", "items[0][quantity]", "0x10", "items[0][unit_price]", "1")
	for _, p := range []string{`"1e5"`, `"NaN"`, `"0x10"`, `"Infinity"`, `"-0.01"`, `"19.999"`, `"1000000.01"`, `1e400`, `"1,50"`, `" "`} {
		j("unit_price "+p, `{"customer":"A","items":[{"name":"x","quantity":1,"unit_price":`+p+`}]}`, 422, "")
	}
	f("unit_price NaN", 422, "", "customer", "A", "items[0][name]", "x", "items[0][quantity]", "1", "items[0][unit_price]", "NaN")

	// Absurd item indexes.
	for _, k := range []string{"items[99999999999][name]", "items[-1][name]", "items[1e3][name]", "items[][name]", "items[0x1][name]", "items[10000][name]", "items[0][name][x]", "items[0]name]"} {
		f(k, 400, "", "customer", "A", k, "x")
	}

	// Too long.
	f("2001-char notes", 422, "at most 2000", "customer", "A", "notes", strings.Repeat("n", 2001))
	j("121-char customer", map[string]any{"customer": strings.Repeat("c", 121)}, 422, "at most 120")
	j("121 two-byte characters in customer", map[string]any{"customer": strings.Repeat("é", 121)}, 422, "at most 120")
	j("65-char SKU", map[string]any{"customer": "A", "items": []any{map[string]any{"sku": strings.Repeat("S", 65), "name": "x", "quantity": 1, "unit_price": "1"}}}, 422, "64")
	j("201-char item name", map[string]any{"customer": "A", "items": []any{item(strings.Repeat("n", 201), 1, "1")}}, 422, "at most 200")
	j("255-char email", map[string]any{"customer": "A", "email": strings.Repeat("e", 243) + "@example.com"}, 422, "")

	// Wrong JSON types and shapes.
	j("customer a number", `{"customer":42}`, 400, "customer")
	j("customer an array", `{"customer":["Ada"]}`, 400, "customer")
	j("customer an object", `{"customer":{"name":"Ada"}}`, 400, "customer")
	j("items an object", `{"customer":"A","items":{"0":{"name":"x"}}}`, 400, "items")
	j("items a string", `{"customer":"A","items":"x"}`, 400, "items")
	j("quantity a bool", `{"customer":"A","items":[{"name":"x","quantity":true,"unit_price":"1"}]}`, 400, "quantity")
	j("unit_price an object", `{"customer":"A","items":[{"name":"x","quantity":1,"unit_price":{}}]}`, 400, "unit_price")
	j("status a number", `{"customer":"A","status":5}`, 400, "status")
	j("a duplicate key of another type", `{"customer":"A","customer":42}`, 400, "")
	for _, b := range []string{"", "null", "[]", `"Ada"`, "42", `{"customer":"A"}{}`, `{"customer":"A"`, `{"customer":"A"}]`, `{customer:"A"}`, `{'customer':'A'}`} {
		j(fmt.Sprintf("body %q", b), b, 400, "")
	}

	// Versions.
	for _, v := range []string{`"abc"`, "0", "-1", "1.5", "1e400", "null2"} {
		ju("version "+v, `{"customer":"V","version":`+v+`}`, 400, "")
	}
	for _, v := range []string{"abc", "0", "-1", "1.0", " ", "99999999999999999999"} {
		add(badCase{name: fmt.Sprintf("PUT form version %q", v), method: http.MethodPut, path: "/orders/1", ctype: ctForm,
			body: formOf("customer", "V", "version", v), want: 400, msg: "version"})
	}
	ju("a stale version", map[string]any{"customer": "V", "version": 99}, 409, "")
	add(badCase{name: "PUT If-Match of another order", method: http.MethodPut, path: "/orders/1", ctype: ctJSON,
		body: jsonOf(map[string]any{"customer": "V"}), want: 412, h: testutil.H{"If-Match": `"o2v1-json"`}})
	add(badCase{name: "PUT If-Match garbage", method: http.MethodPut, path: "/orders/1", ctype: ctJSON,
		body: jsonOf(map[string]any{"customer": "V"}), want: 412, h: testutil.H{"If-Match": "garbage"}})

	// Invalid values of the right type.
	ju("status from pending to delivered", map[string]any{"status": "delivered"}, 422, "cannot change status")
	j("a new order that is shipped", map[string]any{"customer": "A", "status": "shipped"}, 422, "pending")
	j("status bogus", map[string]any{"customer": "A", "status": "bogus"}, 422, "")
	j("currency €", map[string]any{"customer": "A", "currency": "€"}, 422, "")
	j("blank customer", map[string]any{"customer": " \t "}, 422, "required")
	j("no customer", map[string]any{"notes": "x"}, 422, "required")
	j("two email addresses", map[string]any{"customer": "A", "email": "a@example.com, b@example.com"}, 422, "")

	// _method overrides.
	for _, m := range []string{"PATCH", "GET", "POST", "PUT\x00", "DELETE ME", "TRACE"} {
		fraw(fmt.Sprintf("_method %q", m), http.MethodPost, "/orders/1", "_method="+url.QueryEscape(m)+"&customer=M", 400, "_method")
	}
	fraw("_method empty", http.MethodPost, "/orders/1", "_method=&customer=M", 405, "")
	mp("_method PATCH", http.MethodPost, "/orders/1", 400, "_method", "_method", "PATCH", "customer", "M")
	add(badCase{name: "POST json with _method PUT", method: http.MethodPost, path: "/orders/1", ctype: ctJSON,
		body: []byte(`{"_method":"PUT","customer":"M"}`), want: 405})
	add(badCase{name: "POST query ?_method=PUT", method: http.MethodPost, path: "/orders/1?_method=PUT", ctype: ctJSON,
		body: []byte(`{"customer":"M"}`), want: 405})

	// Malformed multipart.
	add(badCase{name: "multipart without a boundary", method: http.MethodPost, path: "/orders", ctype: "multipart/form-data",
		body: []byte("--x\r\nContent-Disposition: form-data; name=\"customer\"\r\n\r\nA\r\n--x--\r\n"), want: 400})
	add(badCase{name: "multipart with an empty boundary", method: http.MethodPost, path: "/orders", ctype: "multipart/form-data; boundary=",
		body: []byte("customer=A"), want: 400})
	add(badCase{name: "multipart garbage", method: http.MethodPost, path: "/orders", ctype: "multipart/form-data; boundary=xyz",
		body: []byte("this is not multipart at all"), want: 400, msg: "multipart"})
	add(badCase{name: "multipart truncated", method: http.MethodPost, path: "/orders", ctype: "multipart/form-data; boundary=xyz",
		body: []byte("--xyz\r\nContent-Disposition: form-data; name=\"customer\"\r\n\r\nAda"), want: 400, msg: "multipart"})
	add(badCase{name: "multipart truncated after _method=PUT", method: http.MethodPost, path: "/orders/1", ctype: "multipart/form-data; boundary=xyz",
		body: []byte("--xyz\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nPUT\r\n--xyz\r\nContent-Disposition: form-data; name=\"customer\"\r\n\r\nAda"), want: 400, msg: "multipart"})
	add(badCase{name: "multipart part without a name", method: http.MethodPost, path: "/orders", ctype: "multipart/form-data; boundary=xyz",
		body: []byte("--xyz\r\nContent-Disposition: form-data\r\n\r\nAda\r\n--xyz--\r\n"), want: 0})

	// Content-Type missing or garbled.
	for _, ct := range []string{"", "text/plain", "application/jso n", ";;;", "/", "application/", "json", "application/xml", "text/html"} {
		add(badCase{name: fmt.Sprintf("POST Content-Type %q", ct), method: http.MethodPost, path: "/orders", ctype: ct,
			body: []byte(`{"customer":"CT"}`), want: 415})
	}
	add(badCase{name: "PUT without Content-Type", method: http.MethodPut, path: "/orders/1", body: []byte(`{"customer":"CT"}`), want: 415})

	// Odd ids in the path.
	for _, p := range []string{"1%00", "..%2f", "99999999999999999999", "0", "01", "-1", "1.0", "1e3", "%31", "1%2F..%2F2", "１"} {
		add(badCase{name: "GET /orders/" + p, method: http.MethodGet, path: "/orders/" + p, want: 404})
		add(badCase{name: "PUT /orders/" + p, method: http.MethodPut, path: "/orders/" + p, ctype: ctJSON,
			body: []byte(`{"customer":"Path"}`), want: 0})
		add(badCase{name: "DELETE /orders/" + p, method: http.MethodDelete, path: "/orders/" + p, want: 0})
	}
	return cs
}

// badTable gathers the malformed requests to one collection (path) and
// its member 1, each case's name starting with the collection's noun.
type badTable struct {
	noun, path string
	cs         []badCase
}

func (b *badTable) add(c badCase) { c.name = b.noun + ": " + c.name; b.cs = append(b.cs, c) }

// body is v as a request body: a string as it is, anything else as JSON.
func body(v any) []byte {
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	return jsonOf(v)
}

// postJSON and putJSON send v to the collection and to member 1.
func (b *badTable) postJSON(name string, v any, want int, msg string) {
	b.add(badCase{name: "POST json " + name, method: http.MethodPost, path: b.path, ctype: ctJSON, body: body(v), want: want, msg: msg})
}

func (b *badTable) putJSON(name string, v any, want int, msg string) {
	b.add(badCase{name: "PUT json " + name, method: http.MethodPut, path: b.path + "/1", ctype: ctJSON, body: body(v), want: want, msg: msg})
}

// postForm and putForm send the form kv to the collection and to member 1.
func (b *badTable) postForm(name string, want int, msg string, kv ...string) {
	b.add(badCase{name: "POST form " + name, method: http.MethodPost, path: b.path, ctype: ctForm, body: formOf(kv...), want: want, msg: msg})
}

func (b *badTable) putForm(name string, want int, msg string, kv ...string) {
	b.add(badCase{name: "PUT form " + name, method: http.MethodPut, path: b.path + "/1", ctype: ctForm, body: formOf(kv...), want: want, msg: msg})
}

// versions adds the malformed and stale versions of a change and a
// delete of member 1 (whose name any change may set).
func (b *badTable) versions() {
	for _, v := range []string{`"abc"`, `"1"`, "0", "-1", "1.5", "1e400", "null2", "true"} {
		b.putJSON("version "+v, `{"name":"V","version":`+v+`}`, 400, "")
	}
	for _, v := range []string{"abc", "0", "-1", "1.0", " ", "99999999999999999999"} {
		b.putForm(fmt.Sprintf("version %q", v), 400, "version", "name", "V", "version", v)
	}
	for _, v := range []string{"abc", "0", "", "1.5"} {
		b.add(badCase{name: fmt.Sprintf("DELETE ?version=%q", v), method: http.MethodDelete, path: b.path + "/1?version=" + url.QueryEscape(v), want: 400, msg: "version"})
	}
	b.putJSON("a stale version", map[string]any{"name": "V", "version": 99}, 409, "")
	b.add(badCase{name: "DELETE a stale version", method: http.MethodDelete, path: b.path + "/1?version=2", want: 409})
}

// framing adds the requests whose method or body type is wrong: a
// _method override that is not PUT or DELETE, one in JSON or the query,
// a multipart body that is none, and a missing or garbled Content-Type
// on a create (whose JSON is create) and a change.
func (b *badTable) framing(create string) {
	member := b.path + "/1"
	for _, m := range []string{"PATCH", "GET", "POST", "PUT\x00", "DELETE ME"} {
		b.add(badCase{name: fmt.Sprintf("POST raw form _method %q", m), method: http.MethodPost, path: member, ctype: ctForm,
			body: []byte("_method=" + url.QueryEscape(m) + "&name=M"), want: 400, msg: "_method"})
	}
	b.add(badCase{name: "POST json with _method DELETE", method: http.MethodPost, path: member, ctype: ctJSON, body: []byte(`{"_method":"DELETE"}`), want: 405})
	b.add(badCase{name: "POST query ?_method=DELETE", method: http.MethodPost, path: member + "?_method=DELETE", ctype: ctJSON, body: []byte(`{"name":"M"}`), want: 405})
	b.add(badCase{name: "multipart garbage", method: http.MethodPost, path: b.path, ctype: "multipart/form-data; boundary=xyz",
		body: []byte("this is not multipart at all"), want: 400, msg: "multipart"})
	for _, ct := range []string{"", "text/plain", "application/jso n", "application/xml", "text/html"} {
		b.add(badCase{name: fmt.Sprintf("POST Content-Type %q", ct), method: http.MethodPost, path: b.path, ctype: ct, body: []byte(create), want: 415})
	}
	b.add(badCase{name: "PUT without Content-Type", method: http.MethodPut, path: member, body: []byte(`{"name":"CT"}`), want: 415})
}

// productBadCases are the malformed product requests (the
// same limits and robustness rules as orders); /products/1 exists, with
// the SKU EXIST-1.
func productBadCases() []badCase {
	b := &badTable{noun: "product", path: "/products"}
	add, j, ju, f := b.add, b.postJSON, b.putJSON, b.postForm
	valid := func(field string, v any) map[string]any {
		b := map[string]any{"sku": "NEW-1", "name": "New", "unit_price": "1.00"}
		b[field] = v
		return b
	}
	mib := strings.Repeat("x", 1<<20)

	// Too large.
	j("over 1 MiB", `{"sku":"BIG","name":"`+mib+`","unit_price":"1"}`, 413, "1 MiB")
	f("over 1 MiB", 413, "1 MiB", "sku", "BIG", "name", mib, "unit_price", "1")
	ct, mp := multipartOf("name", mib)
	add(badCase{name: "PUT multipart over 1 MiB", method: http.MethodPut, path: "/products/1", ctype: ct, body: mp, want: 413, msg: "1 MiB"})
	add(badCase{name: "DELETE with a body over 1 MiB", method: http.MethodDelete, path: "/products/1", ctype: ctForm, body: formOf("version", "1", "pad", mib), want: 413, msg: "1 MiB"})

	// Deep nesting and huge arrays.
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	j("10000-deep array as name", `{"sku":"A","name":`+deep+`,"unit_price":"1"}`, 400, "")
	j("10000-deep object as sku", `{"sku":`+strings.Repeat(`{"a":`, 10000)+"1"+strings.Repeat("}", 10000)+`}`, 400, "")
	j("10000-deep array as active", `{"sku":"A","name":"x","unit_price":"1","active":`+deep+`}`, 400, "")
	j("100000 numbers as unit_price", `{"sku":"A","name":"x","unit_price":[`+strings.TrimSuffix(strings.Repeat("1,", 100000), ",")+`]}`, 400, "unit_price")

	// Wrong JSON types: 400, never 422 or 500.
	j("sku a number", valid("sku", 60), 400, "sku")
	j("sku null and name an array", `{"sku":null,"name":["x"],"unit_price":"1"}`, 400, "name")
	j("name an object", valid("name", map[string]any{"en": "x"}), 400, "name")
	j("unit_price a bool", valid("unit_price", true), 400, "unit_price")
	j("unit_price an object", valid("unit_price", map[string]any{}), 400, "unit_price")
	j("currency a number", valid("currency", 840), 400, "currency")
	for _, v := range []any{"true", "false", 1, 0, "yes", []any{true}, map[string]any{}} {
		j(fmt.Sprintf("active %v (%T)", v, v), valid("active", v), 400, "must be true or false")
	}
	ju("active a string", `{"active":"false"}`, 400, "must be true or false")
	for _, b := range []string{"", "null", "[]", `"KBD"`, "42", `{"sku":"A"}{}`, `{"sku":"A"`, `{"sku":"A"}]`, `{sku:"A"}`, "{\"sku\":\"\xff\"}"} {
		j(fmt.Sprintf("body %q", b), b, 400, "")
	}

	// Invalid values of the right type: 422 naming the field.
	j("no sku", map[string]any{"name": "x", "unit_price": "1"}, 422, "is required")
	j("no name", map[string]any{"sku": "A", "unit_price": "1"}, 422, "is required")
	j("no unit_price", map[string]any{"sku": "A", "name": "x"}, 422, "is required")
	j("an empty object", `{}`, 422, "is required")
	for _, sku := range []string{"bad sku", "bad!", "ÉTÉ", "a/b", "a\\u0000b", strings.Repeat("S", 65), "AB\u202eC"} {
		j("sku "+sku, `{"sku":"`+sku+`","name":"x","unit_price":"1"}`, 422, "")
	}
	j("201-char name", valid("name", strings.Repeat("n", 201)), 422, "at most 200")
	j("201 two-byte characters in name", valid("name", strings.Repeat("é", 201)), 422, "at most 200")
	j("a name of invisible characters", valid("name", "\u200b\ufeff"), 422, "is required")
	j("a bidi override in name", valid("name", "evil\u202eeman"), 422, "bidirectional")
	j("a control character in name", valid("name", "a\u0007b"), 422, "control characters")
	for _, p := range []string{`"1e5"`, `"NaN"`, `"0x10"`, `"Infinity"`, `"-0.01"`, `"19.999"`, `19.999`, `"1000000.01"`, `1e400`, `"1,50"`, `" "`, `-1`} {
		j("unit_price "+p, `{"sku":"P","name":"x","unit_price":`+p+`}`, 422, "")
	}
	for _, c := range []string{"€", "US", "dollars", "U2D", ""} {
		j("currency "+c, valid("currency", c), 422, "three-letter ISO 4217")
	}
	for _, sku := range []string{"EXIST-1", "exist-1", " Exist-1 "} {
		j("duplicate SKU "+sku, valid("sku", sku), 422, "is already the SKU of product 1")
		f("duplicate SKU "+sku, 422, "is already the SKU of product 1", "sku", sku, "name", "Dup", "unit_price", "1")
	}
	f("a blank name", 422, "is required", "sku", "F", "name", " ", "unit_price", "1")
	f("a price of three decimals", 422, "two decimals", "sku", "F", "name", "x", "unit_price", "1.001")
	ju("a blank SKU", map[string]any{"sku": ""}, 422, "is required")
	ju("a blank name", map[string]any{"name": " "}, 422, "is required")

	// A form's checkbox is true or false.
	for _, v := range []string{"yes", "", "2", "checked"} {
		f(fmt.Sprintf("active %q", v), 400, "active must be true or false", "sku", "F", "name", "x", "unit_price", "1", "active", v)
	}

	// Versions.
	b.versions()
	add(badCase{name: "DELETE a stale version in JSON", method: http.MethodDelete, path: "/products/1", ctype: ctJSON, body: []byte(`{"version":7}`), want: 409})
	add(badCase{name: "PUT If-Match of another product", method: http.MethodPut, path: "/products/1", ctype: ctJSON,
		body: jsonOf(map[string]any{"name": "V"}), want: 412, h: testutil.H{"If-Match": `"p2v1-json"`}})
	add(badCase{name: "PUT If-Match of order 1", method: http.MethodPut, path: "/products/1", ctype: ctJSON,
		body: jsonOf(map[string]any{"name": "V"}), want: 412, h: testutil.H{"If-Match": `"o1v1-json"`}})
	add(badCase{name: "DELETE If-Match garbage", method: http.MethodDelete, path: "/products/1", want: 412, h: testutil.H{"If-Match": "garbage"}})

	// _method overrides, multipart, Content-Type.
	b.framing(`{"sku":"CT","name":"x","unit_price":"1"}`)

	// Odd ids in the path.
	for _, p := range []string{"1%00", "..%2f", "99999999999999999999", "0", "01", "-1", "1.0", "1e3", "%31", "2", "１"} {
		add(badCase{name: "GET /products/" + p, method: http.MethodGet, path: "/products/" + p, want: 404})
		add(badCase{name: "PUT /products/" + p, method: http.MethodPut, path: "/products/" + p, ctype: ctJSON, body: []byte(`{"name":"Path"}`), want: 0})
		add(badCase{name: "DELETE /products/" + p, method: http.MethodDelete, path: "/products/" + p, want: 0})
	}
	return b.cs
}

// customerBadCases are the malformed customer requests (the same limits
// and robustness rules as orders and products), and orders' links to
// customers that are not there; /customers/1 exists with the email
// exist@example.com, and order 1 links it.
func customerBadCases() []badCase {
	b := &badTable{noun: "customer", path: "/customers"}
	add, j, ju, f, fu := b.add, b.postJSON, b.putJSON, b.postForm, b.putForm
	get := func(query string, want int, msg string) {
		add(badCase{name: "GET /customers?" + query, method: http.MethodGet, path: "/customers?" + query, want: want, msg: msg})
	}
	valid := func(field string, v any) map[string]any {
		b := map[string]any{"name": "New", "email": "new@example.com"}
		b[field] = v
		return b
	}
	address := func(field string, v any) map[string]any {
		return map[string]any{"name": "New", "address": map[string]any{field: v}}
	}
	mib := strings.Repeat("x", 1<<20)

	// Too large.
	j("over 1 MiB", `{"name":"Big","notes":"`+mib+`"}`, 413, "1 MiB")
	f("over 1 MiB", 413, "1 MiB", "name", "Big", "address.line1", mib)
	ct, mp := multipartOf("notes", mib)
	add(badCase{name: "PUT multipart over 1 MiB", method: http.MethodPut, path: "/customers/1", ctype: ct, body: mp, want: 413, msg: "1 MiB"})
	add(badCase{name: "DELETE with a body over 1 MiB", method: http.MethodDelete, path: "/customers/1", ctype: ctForm, body: formOf("version", "1", "pad", mib), want: 413, msg: "1 MiB"})

	// Deep nesting and huge arrays.
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	j("10000-deep array as name", `{"name":`+deep+`}`, 400, "")
	j("10000-deep object as address", `{"name":"A","address":`+strings.Repeat(`{"a":`, 10000)+"1"+strings.Repeat("}", 10000)+`}`, 400, "")
	j("10000-deep array as address", `{"name":"A","address":`+deep+`}`, 400, "")
	j("10000-deep array as the city", `{"name":"A","address":{"city":`+deep+`}}`, 400, "")
	j("100000 numbers as email", `{"name":"A","email":[`+strings.TrimSuffix(strings.Repeat("1,", 100000), ",")+`]}`, 400, "email")

	// Invalid UTF-8.
	j("invalid UTF-8 in name", "{\"name\":\"Ada \xff\xfe\"}", 0, "UTF-8")
	j("invalid UTF-8 in the city", "{\"name\":\"Ada\",\"address\":{\"city\":\"\xc3\x28\"}}", 0, "UTF-8")
	fraw := func(name, method, path, b string, want int, msg string) {
		add(badCase{name: method + " raw form " + name, method: method, path: path, ctype: ctForm, body: []byte(b), want: want, msg: msg})
	}
	fraw("invalid UTF-8 in name", http.MethodPost, "/customers", "name=Ada%FF%FE", 422, "UTF-8")
	fraw("invalid UTF-8 in company", http.MethodPut, "/customers/1", "company=%C3%28", 422, "UTF-8")
	ct, mp = multipartOf("notes", "bad \xff")
	add(badCase{name: "PUT multipart invalid UTF-8 in notes", method: http.MethodPut, path: "/customers/1", ctype: ct, body: mp, want: 422, msg: "UTF-8"})

	// Control characters and invisible text.
	j("BEL in name", valid("name", "Ada\a"), 422, "control characters")
	j("NUL in notes", valid("notes", "a\x00b"), 422, "control characters")
	j("ESC in company", valid("company", "x\x1b[31m"), 422, "control characters")
	j("NUL in the city", address("city", "Lon\x00don"), 422, "control characters")
	j("a bidi override in name", valid("name", "evil\u202eeman"), 422, "bidirectional")
	j("a name of invisible characters", valid("name", "\u200b\ufeff"), 422, "is required")
	f("CR LF in name", 422, "control characters", "name", "Ada\r\nBcc: x")
	f("a newline in address.line1", 422, "control characters", "name", "Ada", "address.line1", "1 Road\nLondon")
	ju("C1 control in name", map[string]any{"name": "A\u0085da"}, 422, "control characters")

	// Too long: every text field at its limit plus one.
	j("121-char name", valid("name", strings.Repeat("c", 121)), 422, "at most 120")
	j("121 two-byte characters in name", valid("name", strings.Repeat("é", 121)), 422, "at most 120")
	j("121-char company", valid("company", strings.Repeat("c", 121)), 422, "at most 120")
	j("2001-char notes", valid("notes", strings.Repeat("n", 2001)), 422, "at most 2000")
	j("255-char email", valid("email", strings.Repeat("e", 243)+"@example.com"), 422, "")
	j("33-char phone", valid("phone", strings.Repeat("1", 33)), 422, "at most 32")
	for field, max := range map[string]int{"line1": 120, "line2": 120, "city": 80, "region": 80, "postal_code": 20} {
		j(fmt.Sprintf("%d-char address.%s", max+1, field), address(field, strings.Repeat("a", max+1)), 422, fmt.Sprintf("at most %d", max))
	}
	f("81-char address.city", 422, "at most 80", "name", "A", "address.city", strings.Repeat("a", 81))
	fu("2001-char notes", 422, "at most 2000", "notes", strings.Repeat("n", 2001))

	// Wrong JSON types: 400 naming the field, never 422 or 500.
	j("name a number", `{"name":42}`, 400, "name")
	j("name an array", `{"name":["Ada"]}`, 400, "name")
	j("name an object", `{"name":{"first":"Ada"}}`, 400, "name")
	j("email a number", valid("email", 42), 400, "email")
	j("phone a number", valid("phone", 4930123), 400, "phone")
	j("company a bool", valid("company", true), 400, "company")
	j("notes an array", valid("notes", []any{"x"}), 400, "notes")
	j("address a string", valid("address", "1 Road, London"), 400, "address")
	j("address an array", valid("address", []any{"1 Road"}), 400, "address")
	j("address a number", valid("address", 7), 400, "address")
	j("address.city a number", address("city", 12), 400, "city")
	j("address.country an object", address("country", map[string]any{"code": "DE"}), 400, "country")
	j("a duplicate key of another type", `{"name":"A","name":42}`, 400, "")
	for _, b := range []string{"", "null", "[]", `"Ada"`, "42", `{"name":"A"}{}`, `{"name":"A"`, `{"name":"A"}]`, `{name:"A"}`, `{'name':'A'}`} {
		j(fmt.Sprintf("body %q", b), b, 400, "")
	}

	// Unknown fields are no fields: without a name nothing is created.
	j("unknown fields only", `{"nom":"Ada","mail":"ada@example.com","orders":[1]}`, 422, "is required")
	j("an empty object", `{}`, 422, "is required")
	j("the name nested in an unknown object", `{"customer":{"name":"Ada"}}`, 422, "is required")
	j("the name as an address member", `{"address":{"name":"Ada"}}`, 422, "is required")
	j("derived fields sent", `{"order_count":5,"totals":[],"id":9}`, 422, "is required")
	f("unknown keys only", 422, "is required", "nom", "Ada", "address[city]", "London")

	// Invalid values of the right type: 422 naming the field.
	j("no name", map[string]any{"email": "a@example.com"}, 422, "is required")
	j("a blank name", valid("name", " \t "), 422, "is required")
	for _, e := range []string{"ada", "ada@", "@example.com", "Ada <ada@example.com>", "a@example.com, b@example.com", "a b@example.com"} {
		j("email "+e, valid("email", e), 422, "email address")
	}
	for _, p := range []string{"call me", "+", "()-", "12#34", "1\u00a02"} {
		j("phone "+p, valid("phone", p), 422, "")
	}
	for _, c := range []string{"DEU", "D", "EU", "ZZ", "UK", "DD", "419", "1A", "dé"} {
		j("country "+c, address("country", c), 422, "ISO 3166-1")
	}
	for _, e := range []string{"exist@example.com", "EXIST@example.com", " Exist@Example.com "} {
		j("duplicate email "+e, valid("email", e), 422, "is already the email of customer 1")
		f("duplicate email "+e, 422, "is already the email of customer 1", "name", "Dup", "email", e)
	}
	f("a blank name", 422, "is required", "name", " ")
	f("country DEU", 422, "ISO 3166-1", "name", "A", "address.country", "DEU")
	ju("a blank name", map[string]any{"name": ""}, 422, "is required")
	ju("a null address with a bad email", `{"address":null,"email":"nope"}`, 422, "email address")
	fu("a bad phone", 422, "", "phone", "+49 (30) abc")

	// Versions.
	b.versions()
	add(badCase{name: "PUT If-Match of another customer", method: http.MethodPut, path: "/customers/1", ctype: ctJSON,
		body: jsonOf(map[string]any{"name": "V"}), want: 412, h: testutil.H{"If-Match": `"c2v1-json"`}})
	add(badCase{name: "PUT If-Match of product 1", method: http.MethodPut, path: "/customers/1", ctype: ctJSON,
		body: jsonOf(map[string]any{"name": "V"}), want: 412, h: testutil.H{"If-Match": `"p1v1-json"`}})
	add(badCase{name: "DELETE If-Match garbage", method: http.MethodDelete, path: "/customers/1", want: 412, h: testutil.H{"If-Match": "garbage"}})

	// A customer with orders is not deleted, at its own version either.
	add(badCase{name: "DELETE a customer with an order", method: http.MethodDelete, path: "/customers/1?version=1", want: 409, msg: "has 1 order"})
	add(badCase{name: "DELETE a customer with an order, no version", method: http.MethodDelete, path: "/customers/1", want: 409, msg: "has 1 order"})

	// An order's link names a stored customer, by its number.
	oj := func(name, method, path string, v any, want int, msg string) {
		add(badCase{name: method + " order json " + name, method: method, path: path, ctype: ctJSON, body: body(v), want: want, msg: msg})
	}
	for _, id := range []any{2, 999, "99999999999999999999", "0"} {
		oj(fmt.Sprintf("customer_id %v", id), http.MethodPost, "/orders", map[string]any{"customer": "A", "customer_id": id}, 422, "customer_id")
		oj(fmt.Sprintf("customer_id %v", id), http.MethodPut, "/orders/1", map[string]any{"customer_id": id}, 422, "customer_id")
	}
	for _, id := range []string{"abc", "-1", "1.5", "1e3", "0x1", "１"} {
		oj("customer_id "+id, http.MethodPost, "/orders", map[string]any{"customer": "A", "customer_id": id}, 422, "customer's number")
	}
	oj("customer_id an object", http.MethodPost, "/orders", `{"customer":"A","customer_id":{"id":1}}`, 400, "customer_id")
	oj("customer_id an array", http.MethodPut, "/orders/1", `{"customer_id":[1]}`, 400, "customer_id")
	oj("customer_id a bool", http.MethodPost, "/orders", `{"customer":"A","customer_id":true}`, 400, "customer_id")
	add(badCase{name: "POST order form customer_id 999", method: http.MethodPost, path: "/orders", ctype: ctForm,
		body: formOf("customer", "A", "customer_id", "999"), want: 422, msg: "no customer 999"})
	add(badCase{name: "PUT order form customer_id abc", method: http.MethodPut, path: "/orders/1", ctype: ctForm,
		body: formOf("customer_id", "abc"), want: 422, msg: "customer's number"})

	// _method overrides, multipart, Content-Type.
	b.framing(`{"name":"CT"}`)
	add(badCase{name: "multipart truncated", method: http.MethodPost, path: "/customers", ctype: "multipart/form-data; boundary=xyz",
		body: []byte("--xyz\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nAda"), want: 400, msg: "multipart"})

	// Odd ids in the path.
	for _, p := range []string{"1%00", "..%2f", "99999999999999999999", "0", "01", "-1", "1.0", "1e3", "%31", "2", "１"} {
		add(badCase{name: "GET /customers/" + p, method: http.MethodGet, path: "/customers/" + p, want: 404})
		add(badCase{name: "GET /customers/" + p + "/edit", method: http.MethodGet, path: "/customers/" + p + "/edit", want: 404})
		add(badCase{name: "PUT /customers/" + p, method: http.MethodPut, path: "/customers/" + p, ctype: ctJSON, body: []byte(`{"name":"Path"}`), want: 0})
		add(badCase{name: "DELETE /customers/" + p, method: http.MethodDelete, path: "/customers/" + p, want: 0})
	}

	// The List's query.
	for _, s := range []string{"sku", "bogus", "customer", "-total", "name;DROP", "%00"} {
		get("sort="+s, 400, "sort must be one of")
	}
	for _, n := range []string{"abc", "1.5", "1e3", "0x10", "%00", "１"} {
		get("page="+n, 400, "page must be a whole number")
		get("per_page="+n, 400, "per_page must be a whole number")
	}
	return b.cs
}

// checkMessage checks a 4xx answer is in the representation asked for and
// says what is wrong.
func checkMessage(t *testing.T, what string, r *testutil.Resp, wantJSON bool, msg string) {
	t.Helper()
	ct := r.Header.Get("Content-Type")
	body := r.Body
	if wantJSON {
		var e struct {
			Error  string            `json:"error"`
			Errors map[string]string `json:"errors"`
		}
		if !strings.HasPrefix(ct, "application/json") || r.Decode(&e) != nil || e.Error == "" {
			t.Errorf("%s: got %d with Content-Type %q and body %s, want JSON with an \"error\"", what, r.Status, ct, testutil.Snippet(r.Body))
			return
		}
		if r.Status == 422 && len(e.Errors) == 0 {
			t.Errorf("%s: 422 without \"errors\": %s", what, testutil.Snippet(r.Body))
		}
		body = e.Error
		for k, v := range e.Errors {
			body += " | " + k + ": " + v
		}
	} else {
		if !strings.HasPrefix(ct, "text/html") {
			t.Errorf("%s: got %d with Content-Type %q, want text/html; body %s", what, r.Status, ct, testutil.Snippet(r.Body))
			return
		}
		shown := strings.Contains(body, `id="error"`) || strings.Contains(body, `class="error-text"`) ||
			strings.Contains(body, `<div class="notice notice-`) || strings.Contains(body, `<hx-partial hx-target="#notice"`)
		if !shown {
			t.Errorf("%s: got %d, but the HTML shows no message (no error section, field error or notice): %s", what, r.Status, testutil.Snippet(r.Body))
		}
		// A page writes the message as a sentence: a capital first, and a
		// query parameter it starts with in quotes ("“page” must be …").
		body = strings.NewReplacer("“", "", "”", "").Replace(strings.ToLower(html.UnescapeString(body)))
		msg = strings.ToLower(msg)
	}
	if msg != "" && !strings.Contains(body, msg) {
		t.Errorf("%s: got %d with message %s, want it to mention %q", what, r.Status, testutil.Snippet(body), msg)
	}
}

// TestBadInput sends malformed requests in JSON and HTML and finds each
// answered 4xx, with a message, and nothing stored.
func TestBadInput(t *testing.T) {
	testutil.Long(t)
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	app := inProcess(t, rdb)

	send(t, app, http.MethodPost, "/customers", ctJSON,
		jsonOf(map[string]any{"name": "Existing", "email": "exist@example.com"}), testutil.HJSON).WantStatus(t, 201)
	send(t, app, http.MethodPost, "/orders", ctJSON,
		jsonOf(map[string]any{"customer": "Existing", "customer_id": 1, "items": []any{item("Cup", 2, "3.50")}}), testutil.HJSON).WantStatus(t, 201)
	send(t, app, http.MethodPost, "/products", ctJSON,
		jsonOf(map[string]any{"sku": "EXIST-1", "name": "Existing", "unit_price": "3.50"}), testutil.HJSON).WantStatus(t, 201)
	before := mr.Dump()

	tried, changed, perStatus := 0, 0, map[int]int{}
	for _, c := range slices.Concat(badCases(), productBadCases(), customerBadCases()) {
		for _, rep := range []struct {
			name string
			h    testutil.H
			json bool
		}{{"json", testutil.HJSON, true}, {"page", testutil.HPage, false}, {"htmx", testutil.HHX.With(testutil.H{"HX-Target": "main#main"}), false}} {
			what := fmt.Sprintf("%s (%s)", c.name, rep.name)
			r := send(t, app, c.method, c.path, c.ctype, c.body, rep.h.With(c.h))
			tried++
			perStatus[r.Status]++
			switch {
			case r.Status >= 500:
				t.Errorf("%s: got %d, want 4xx; body %s", what, r.Status, testutil.Snippet(r.Body))
			case c.want != 0 && r.Status != c.want:
				t.Errorf("%s: got %d, want %d; body %s", what, r.Status, c.want, testutil.Snippet(r.Body))
			case c.want == 0 && (r.Status < 400 || r.Status > 499):
				t.Errorf("%s: got %d, want 4xx; body %s", what, r.Status, testutil.Snippet(r.Body))
			default:
				checkMessage(t, what, r, rep.json, c.msg)
			}
			if after := mr.Dump(); after != before {
				t.Errorf("%s: answered %d but Redis changed; now it holds:\n%s", what, r.Status, tail(after, 30))
				before = after
				changed++
			}
		}
	}
	if changed > 0 {
		t.Fatalf("%d malformed requests changed what Redis holds", changed)
	}
	// And through the API: one order, still at version 1.
	var l listJSON
	send(t, app, http.MethodGet, "/orders", "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &l)
	var o orderJSON
	send(t, app, http.MethodGet, "/orders/1", "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &o)
	if l.Total != 1 || o.Version != 1 || o.Customer != "Existing" || len(o.Items) != 1 {
		t.Fatalf("after the malformed requests: %d orders, order 1 at version %d named %q with %d items; want 1 order, version 1, \"Existing\", 1 item",
			l.Total, o.Version, o.Customer, len(o.Items))
	}
	var pl struct {
		Total int64 `json:"total"`
	}
	send(t, app, http.MethodGet, "/products", "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &pl)
	p := send(t, app, http.MethodGet, "/products/1", "", nil, testutil.HJSON).WantStatus(t, 200).Object(t)
	if pl.Total != 1 || p["version"] != float64(1) || p["sku"] != "EXIST-1" || p["active"] != true {
		t.Fatalf("after the malformed requests: %d products, product 1 %v; want 1 product, EXIST-1 at version 1, active", pl.Total, p)
	}
	var cl struct {
		Total int64 `json:"total"`
	}
	send(t, app, http.MethodGet, "/customers", "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &cl)
	cu := send(t, app, http.MethodGet, "/customers/1", "", nil, testutil.HJSON).WantStatus(t, 200).Object(t)
	if cl.Total != 1 || cu["version"] != float64(1) || cu["email"] != "exist@example.com" || cu["order_count"] != float64(1) {
		t.Fatalf("after the malformed requests: %d customers, customer 1 %v; want 1 customer, exist@example.com at version 1 with 1 order", cl.Total, cu)
	}
	// A new product and a new customer are still numbered 2: no refused
	// create used an id.
	for path, v := range map[string]map[string]any{
		"/products":  {"sku": "AFTER", "name": "After", "unit_price": "1"},
		"/customers": {"name": "After", "email": "after@example.com"},
	} {
		var created struct {
			ID int64 `json:"id"`
		}
		send(t, app, http.MethodPost, path, ctJSON, jsonOf(v), testutil.HJSON).WantStatus(t, 201).JSON(t, &created)
		if created.ID != 2 {
			t.Errorf("the first of %s after the malformed requests is %d, want 2", path, created.ID)
		}
	}
	t.Logf("%d malformed requests (%d cases × JSON, page, htmx; orders, products and customers): answers %v; Redis unchanged after every one", tried, tried/3, perStatus)
}

// TestBadInputOverHTTP sends the malformed requests that fasthttp itself
// refuses while reading them (app.Test cannot send those) to the built
// binary on its embedded store.
func TestBadInputOverHTTP(t *testing.T) {
	testutil.Long(t)
	app := startApp(t, "")
	mustCall(t, app.base, http.MethodPost, "/orders", ctJSON, jsonOf(map[string]any{"customer": "Existing"}), testutil.HJSON).WantStatus(t, 201)
	mustCall(t, app.base, http.MethodPost, "/customers", ctJSON, jsonOf(map[string]any{"name": "Existing"}), testutil.HJSON).WantStatus(t, 201)
	five := strings.Repeat("x", 5<<20)
	mpCT, mpBig := multipartOf("customer", "Big", "notes", five)
	cases := []badCase{
		{name: "JSON of 5 MiB", method: http.MethodPost, path: "/orders", ctype: ctJSON,
			body: []byte(`{"customer":"Big","notes":"` + five + `"}`), want: 413, msg: "1 MiB"},
		{name: "form of 5 MiB", method: http.MethodPut, path: "/orders/1", ctype: ctForm,
			body: formOf("notes", five), want: 413, msg: "1 MiB"},
		{name: "multipart of 5 MiB", method: http.MethodPost, path: "/orders", ctype: mpCT, body: mpBig, want: 413, msg: "1 MiB"},
		{name: "customer JSON of 5 MiB", method: http.MethodPost, path: "/customers", ctype: ctJSON,
			body: []byte(`{"name":"Big","notes":"` + five + `"}`), want: 413, msg: "1 MiB"},
		{name: "customer form of 5 MiB", method: http.MethodPut, path: "/customers/1", ctype: ctForm,
			body: formOf("address.line1", five), want: 413, msg: "1 MiB"},
		{name: "multipart garbage", method: http.MethodPost, path: "/orders", ctype: "multipart/form-data; boundary=xyz",
			body: []byte("this is not multipart at all"), want: 400, msg: "multipart"},
		{name: "multipart truncated", method: http.MethodPost, path: "/orders", ctype: "multipart/form-data; boundary=xyz",
			body: []byte("--xyz\r\nContent-Disposition: form-data; name=\"customer\"\r\n\r\nAda"), want: 400, msg: "multipart"},
		{name: "multipart truncated, as _method=PUT", method: http.MethodPost, path: "/orders/1", ctype: "multipart/form-data; boundary=xyz",
			body: []byte("--xyz\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nPUT\r\n--xyz\r\nContent-Disposition: form-data; name=\"customer\"\r\n\r\nAda"), want: 400, msg: "multipart"},
	}
	tried := 0
	for _, c := range cases {
		for _, rep := range []struct {
			name string
			h    testutil.H
			json bool
		}{{"json", testutil.HJSON, true}, {"page", testutil.HPage, false}} {
			what := fmt.Sprintf("%s (%s)", c.name, rep.name)
			r, err := call(app.base, c.method, c.path, c.ctype, c.body, rep.h)
			tried++
			if err != nil {
				t.Errorf("%s: %v, want a %d answer", what, err, c.want)
				continue
			}
			if r.Status != c.want {
				t.Errorf("%s: got %d, want %d; body %s", what, r.Status, c.want, testutil.Snippet(r.Body))
				continue
			}
			checkMessage(t, what, r, rep.json, c.msg)
			for _, leak := range []string{"NextPart", "fasthttp", "EOF", "multipart: "} {
				if strings.Contains(r.Body, leak) {
					t.Errorf("%s: the message shows internals (%q): %s", what, leak, testutil.Snippet(r.Body))
				}
			}
		}
	}
	var l listJSON
	mustCall(t, app.base, http.MethodGet, "/orders", "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &l)
	var o orderJSON
	mustCall(t, app.base, http.MethodGet, "/orders/1", "", nil, testutil.HJSON).WantStatus(t, 200).JSON(t, &o)
	if l.Total != 1 || o.Version != 1 || o.Customer != "Existing" {
		t.Fatalf("after the malformed requests: %d orders, order 1 at version %d named %q; want 1 order at version 1 named \"Existing\"", l.Total, o.Version, o.Customer)
	}
	if c := mustCall(t, app.base, http.MethodGet, "/customers/1", "", nil, testutil.HJSON).WantStatus(t, 200).Object(t); c["version"] != float64(1) || c["notes"] != "" {
		t.Fatalf("after the malformed requests: customer 1 is %v, want it at version 1 without notes", c)
	}
	t.Logf("%d malformed requests over HTTP (refused while reading the body): all 4xx, the 5 MiB uploads' 413 read whole while still sending, nothing stored", tried)
}
