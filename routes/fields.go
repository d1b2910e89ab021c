package routes

// A resource's fields as one table: each entry is one field, with its form
// key and JSON name (one name: forms and JSON name a field alike), how its
// value is read, its limit, where it
// goes in the resource's input and how its control is drawn. The form and
// JSON decoders walk the table, and so do the forms (fieldView,
// partials/field.html): adding a field to a resource is one entry.

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
)

// kind is how a field's value is read.
type kind int

const (
	// kindText is text: a JSON string.
	kindText kind = iota
	// kindNumber is a whole number, kept as the text sent for the store to
	// check (never through a float): a JSON number or string.
	kindNumber
	// kindMoney is an amount, kept as text like kindNumber.
	kindMoney
	// kindVersion is the version the client read: a whole number from 1.
	kindVersion
	// kindRows is a list of rows of fields: rows[N][field] in a form (N
	// from 0, gaps allowed, kept in N order), an array of objects in JSON.
	kindRows
	// kindBool is yes or no: true or false in JSON; in a form "true" or
	// "false" (a checkbox's "on" and "1", "0" too). A form's checkbox comes
	// before a hidden "false" of the same name: the first value counts.
	kindBool
)

// jsonWant says what a JSON value of each kind must be (the 400's message).
var jsonWant = [...]string{
	kindText:    "a string",
	kindNumber:  "a number",
	kindMoney:   `a decimal string like "19.99"`,
	kindVersion: "a whole number",
	kindRows:    "an array",
	kindBool:    "true or false",
}

// parseBool reads a kindBool value sent as text.
func parseBool(name, s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "on", "1":
		return true, nil
	case "false", "off", "0":
		return false, nil
	}
	return false, badRequest("%s must be true or false", name)
}

// msgVersion is the one message for a version that is not a whole number
// from 1, wherever it was sent: a form, JSON, a DELETE's query.
const msgVersion = "version must be a whole number from 1"

// parseVersion reads a version sent as text.
func parseVersion(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 1 {
		return 0, badRequest(msgVersion)
	}
	return n, nil
}

// field is one field of a resource whose input is a T.
type field[T any] struct {
	// Name is the form key, the JSON name and the error key. A dotted name
	// ("address.city") is a member of a JSON object ({"address": {"city":
	// ...}}); forms and errors use the dotted name.
	Name string
	// Label names the field's control; a message is shown after it
	// ("Customer is required").
	Label string
	Kind  kind
	// Max is the most characters the store takes: the control's maxlength.
	Max int
	// UI is how the control is drawn.
	UI control
	// Fold says the store keeps the value in one case (a currency): a
	// comparison ignores case.
	Fold bool
	// History names the field in a history entry when Label says more
	// than that ("" : Label); HistoryFirst lists its change before the
	// others' (what a reader looks for first: an order's status).
	History      string
	HistoryFirst bool
	// Where the value goes in T, by Kind: text for text that may be
	// absent (nil: not sent, so an update keeps the stored value); cell
	// for text a row always has; version; rows.
	text    func(*T) **string
	cell    func(*T) *string
	version func(*T) **int64
	flag    func(*T) **bool
	rows    rowList[T]
}

// control is how partials/field.html draws a field's control.
type control struct {
	Tag       string // "input" (when empty), "select" or "textarea"
	Type      string // an input's type; "" is text
	Required  bool
	Optional  bool // the label says "(optional)"
	Size      int
	Pattern   string
	InputMode string
	Rows      int // a textarea's
	// Autocomplete is an input's autocomplete attribute ("": off, but a
	// List row's inline form leaves the browser's alone).
	Autocomplete string
	Class        string // more classes of the field's box
	// OwnSentence: the field's messages read alone, without its label
	// before them ("cannot change status from shipped to pending").
	OwnSentence bool
	// FromProduct names the product field (its JSON name) whose value a
	// product chosen in the order forms' picker puts in this control
	// (data-product-field, for app.js); "" for none.
	FromProduct string
	// Suggest is the collection whose active members typing in this
	// control suggests (data-product-picker, its path, for app.js: the
	// picker, an ARIA combobox of up to 10 of them, whose words name
	// what is picked by the collection's names). Without JavaScript it
	// does nothing.
	Suggest *resource
}

// fields is the table of a resource, or of one row of a kindRows field.
type fields[T any] []field[T]

// historyLabels are the fields a history entry lists, in the order it
// lists them, each with its label: the table's text, money and yes-or-no
// fields (rows have lines of their own; the version is no field of its).
func (fs fields[T]) historyLabels() []historyLabel {
	var first, rest []historyLabel
	for _, f := range fs {
		if f.Kind == kindVersion || f.Kind == kindRows {
			continue
		}
		l := historyLabel{name: f.Name, label: f.Label}
		if f.History != "" {
			l.label = f.History
		}
		if f.HistoryFirst {
			first = append(first, l)
		} else {
			rest = append(rest, l)
		}
	}
	return append(first, rest...)
}

// historyLabel is one field as a history entry names it.
type historyLabel struct{ name, label string }

// byName returns the field of that form key, or nil.
func (fs fields[T]) byName(name string) *field[T] {
	for i := range fs {
		if fs[i].Name == name {
			return &fs[i]
		}
	}
	return nil
}

// byJSONName returns the field a JSON member names: by its exact name, or
// else ignoring case, as encoding/json matches struct fields (this API
// has always read them so).
func (fs fields[T]) byJSONName(name string) *field[T] {
	if f := fs.byName(name); f != nil {
		return f
	}
	for i := range fs {
		if strings.EqualFold(fs[i].Name, name) {
			return &fs[i]
		}
	}
	return nil
}

// setText stores a text value of f in dst.
func (f *field[T]) setText(dst *T, v string) {
	if f.cell != nil {
		*f.cell(dst) = v
	} else {
		*f.text(dst) = &v
	}
}

// value returns f's text value in src, and whether it was sent.
func (f *field[T]) value(src *T) (string, bool) {
	switch {
	case f.cell != nil:
		return *f.cell(src), true
	case f.text != nil:
		if p := *f.text(src); p != nil {
			return *p, true
		}
	case f.flag != nil:
		if p := *f.flag(src); p != nil {
			return strconv.FormatBool(*p), true
		}
	}
	return "", false
}

// overlay sets in dst every text field src carries: what a person typed,
// over the values a form started with.
func (fs fields[T]) overlay(dst, src *T) {
	for i := range fs {
		switch f := &fs[i]; {
		case f.text != nil:
			if p := *f.text(src); p != nil {
				*f.text(dst) = p
			}
		case f.flag != nil:
			if p := *f.flag(src); p != nil {
				*f.flag(dst) = p
			}
		}
	}
}

// fromForm reads form pairs into dst, in the order sent: the first value
// of a key counts. Row keys (items[N][field]) are gathered by N, gaps
// allowed, and kept in N order. Keys that name no field (_method, buttons)
// are skipped; a key that starts like a row's but is not one is a 400.
func (fs fields[T]) fromForm(dst *T, kv [][2]string) error {
	seen := map[string]bool{}
	var rows map[*field[T]]map[int][][2]string
	for _, p := range kv {
		k, v := p[0], p[1]
		f := fs.byName(k)
		if f == nil || f.Kind == kindRows {
			rf, n, sub, err := fs.rowKey(k)
			if err != nil {
				return err
			}
			if rf == nil {
				continue
			}
			if rows == nil {
				rows = map[*field[T]]map[int][][2]string{}
			}
			byN := rows[rf]
			if byN == nil {
				byN = map[int][][2]string{}
				rows[rf] = byN
			}
			if sub == "" {
				continue // "items" alone: the rows were sent, even none
			}
			if _, ok := byN[n]; !ok && len(byN) >= rf.rows.limit() {
				return badRequest("too many %s", rf.Name)
			}
			byN[n] = append(byN[n], [2]string{sub, v})
			continue
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		if f.Kind == kindVersion {
			n, err := parseVersion(v)
			if err != nil {
				return err
			}
			*f.version(dst) = &n
			continue
		}
		if f.Kind == kindBool {
			b, err := parseBool(f.Name, v)
			if err != nil {
				return err
			}
			*f.flag(dst) = &b
			continue
		}
		f.setText(dst, v)
	}
	for f, byN := range rows {
		if err := f.rows.fromForm(dst, byN); err != nil {
			return err
		}
	}
	return nil
}

// rowKey reads a form key of a kindRows field: "items" or "items[]" (sub
// is ""), or "items[N][field]". It returns a nil field for a key of no
// rows field, and a 400 for a malformed one.
func (fs fields[T]) rowKey(k string) (f *field[T], n int, sub string, err error) {
	for i := range fs {
		f := &fs[i]
		if f.Kind != kindRows {
			continue
		}
		if k == f.Name || k == f.Name+"[]" {
			return f, 0, "", nil
		}
		if rest, ok := strings.CutPrefix(k, f.Name+"["); ok {
			n, sub, ok := f.rows.key(rest)
			if !ok {
				return nil, 0, "", badRequest("%q is not a form key this resource knows; %s use %s[N][field]", k, f.Name, f.Name)
			}
			if n > maxRowIndex {
				return nil, 0, "", badRequest("%s index %d is out of range (0 to %d)", f.rows.noun(), n, maxRowIndex)
			}
			return f, n, sub, nil
		}
	}
	return nil, 0, "", nil
}

// maxRowIndex bounds the N of items[N][field]: gaps are allowed, absurd
// numbers are not.
const maxRowIndex = 9999

var errNotJSON = badRequest("the body is not valid JSON")

// fromJSON reads a JSON object whose syntax has been checked into dst.
// path names the object in messages ("items[2]"; "" for the body). A
// member of a field's name sets it (the last one, when a name repeats);
// other members are ignored.
func (fs fields[T]) fromJSON(dst *T, obj json.RawMessage, path string) error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return errNotJSON
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return errNotJSON
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return errNotJSON
		}
		if f := fs.byJSONName(name); f != nil {
			if err := f.fromJSON(dst, bytes.TrimSpace(raw), path); err != nil {
				return err
			}
		} else if group := fs.group(name); group != "" {
			if err := fs.groupFromJSON(dst, group, bytes.TrimSpace(raw), path); err != nil {
				return err
			}
		}
	}
	return nil
}

// group returns the object name a JSON member names when the table has
// dotted fields under it ("address" for address.city), ignoring case as
// byJSONName does; "" when it has none.
func (fs fields[T]) group(name string) string {
	for i := range fs {
		if g, _, ok := strings.Cut(fs[i].Name, "."); ok && strings.EqualFold(g, name) {
			return g
		}
	}
	return ""
}

// groupFromJSON reads the object of group: each member sets the field
// group.member; null sends none of them.
func (fs fields[T]) groupFromJSON(dst *T, group string, raw json.RawMessage, path string) error {
	if string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return badRequest("field %s: must be an object", group)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.Token() // {
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return errNotJSON
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return errNotJSON
		}
		if f := fs.byJSONName(group + "." + t.(string)); f != nil {
			if err := f.fromJSON(dst, bytes.TrimSpace(v), path); err != nil {
				return err
			}
		}
	}
	return nil
}

// fromJSON reads f's value; null is a field not sent (in a row: empty).
func (f *field[T]) fromJSON(dst *T, raw json.RawMessage, path string) error {
	name := f.Name
	if path != "" {
		name = path + "[" + f.Name + "]"
	}
	wrongType := func() error { return badRequest("field %s: must be %s", name, jsonWant[f.Kind]) }
	null := string(raw) == "null"
	switch f.Kind {
	case kindVersion:
		if null {
			*f.version(dst) = nil
			return nil
		}
		var n int64
		if json.Unmarshal(raw, &n) != nil {
			return wrongType()
		}
		if n < 1 {
			return badRequest(msgVersion)
		}
		*f.version(dst) = &n
	case kindBool:
		if null {
			*f.flag(dst) = nil
			return nil
		}
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return wrongType()
		}
		*f.flag(dst) = &b
	case kindRows:
		if null {
			return f.rows.fromJSON(dst, nil, name)
		}
		if raw[0] != '[' {
			return wrongType()
		}
		return f.rows.fromJSON(dst, raw, name)
	default:
		if null && f.text != nil {
			*f.text(dst) = nil
			return nil
		}
		var s string
		var err error
		if f.Kind == kindText {
			if !null && (raw[0] != '"' || json.Unmarshal(raw, &s) != nil) {
				err = errWrongType
			}
		} else {
			s, err = scalarText(raw)
		}
		if err != nil {
			return wrongType()
		}
		f.setText(dst, s)
	}
	return nil
}

var errWrongType = errors.New("wrong type")

// scalarText returns a JSON string's value or a JSON number's literal text,
// so numbers are checked as text and never pass through a float.
func scalarText(raw json.RawMessage) (string, error) {
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
	return "", errWrongType
}

// rowList is the rows of a kindRows field of a T.
type rowList[T any] interface {
	// key reads the rest of a form key after "items[": "12][name]".
	key(rest string) (n int, sub string, ok bool)
	// noun is what one row is called in messages: "item".
	noun() string
	// limit is the most rows a request may carry (the store allows fewer).
	limit() int
	// fromForm stores the rows from their pairs by N, keyed by the rows'
	// field names; fromJSON from a JSON array (nil: null, no rows sent).
	fromForm(dst *T, byN map[int][][2]string) error
	fromJSON(dst *T, arr json.RawMessage, name string) error
}

// rows is a rowList whose rows are R values.
type rows[T, R any] struct {
	fields fields[R]
	// Noun is one row in messages; Limit is the most rows decoded.
	Noun  string
	Limit int
	// newRow returns row n (the N the request used); set stores the rows
	// in T, nil when none were sent.
	newRow func(n int) R
	set    func(dst *T, rs []R)
}

func (r *rows[T, R]) noun() string { return r.Noun }
func (r *rows[T, R]) limit() int   { return r.Limit }

func (r *rows[T, R]) key(rest string) (int, string, bool) {
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
	sub := rest[1 : len(rest)-1]
	if f := r.fields.byName(sub); f == nil || f.Kind == kindRows {
		return 0, "", false
	}
	return n, sub, true
}

// fromForm keeps the rows in N order and drops those whose fields are all
// blank: a form offers empty rows to fill in.
func (r *rows[T, R]) fromForm(dst *T, byN map[int][][2]string) error {
	ns := make([]int, 0, len(byN))
	for n := range byN {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	out := make([]R, 0, len(ns))
	for _, n := range ns {
		row := r.newRow(n)
		if err := r.fields.fromForm(&row, byN[n]); err != nil {
			return err
		}
		if !r.blank(&row) {
			out = append(out, row)
		}
	}
	r.set(dst, out)
	return nil
}

func (r *rows[T, R]) blank(row *R) bool {
	for i := range r.fields {
		if v, _ := r.fields[i].value(row); strings.TrimSpace(v) != "" {
			return false
		}
	}
	return true
}

func (r *rows[T, R]) fromJSON(dst *T, arr json.RawMessage, name string) error {
	if arr == nil {
		r.set(dst, nil)
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(arr, &elems); err != nil {
		return errNotJSON
	}
	if len(elems) > r.Limit {
		return badRequest("too many %s", name)
	}
	out := make([]R, 0, len(elems))
	for n, e := range elems {
		row := r.newRow(n)
		path := name + "[" + strconv.Itoa(n) + "]"
		switch e = bytes.TrimSpace(e); {
		case string(e) == "null":
		case e[0] == '{':
			if err := r.fields.fromJSON(&row, e, path); err != nil {
				return err
			}
		default:
			return badRequest("field %s: must be an object", path)
		}
		out = append(out, row)
	}
	r.set(dst, out)
	return nil
}

// errKey is the error key (and form key) of field sub of row n:
// items[N][field], with the N the request sent, so a 422 puts each message
// beside the row it is about.
func errKey(rowsName string, n int, sub string) string {
	return rowsName + "[" + strconv.Itoa(n) + "][" + sub + "]"
}

// badRequest is a 400 with a message made as fmt.Sprintf makes it.
func badRequest(format string, args ...any) error {
	return fiber.NewError(fiber.StatusBadRequest, fmt.Sprintf(format, args...))
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
