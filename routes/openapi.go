package routes

// The OpenAPI description of the JSON API, served at GET /openapi.json. It
// is made once, at start, from what the resources register: the paths of
// rule 5 (collection, /new, member, /edit, history, the collection's other
// views) from each resource's names, the request bodies from its field
// table, the records from the JSON its store type writes, the List's query
// from its listing. Nothing in this file names a resource: a resource added
// to the registrations is described with the others.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// OpenAPIPath is where the description is served.
const OpenAPIPath = "/openapi.json"

// obj is a JSON object of the description.
type obj = map[string]any

// apiResource is what the description reads of one resource.
type apiResource struct {
	R *resource
	// Fields are the field table, as JSON requests send them.
	Fields []apiField
	// Record is the stored record, whose JSON a member's answers carry.
	Record reflect.Type
	// Listing is the List's sorts and filters; Views are the collection's
	// other views (/orders/inquiry), whose entries are whole records.
	Listing *listing
	Views   []string
	// History: the members have a history and take notes.
	History bool
	// Idempotent: a create may carry an Idempotency-Key.
	Idempotent bool
	// Defaults are the values the New form for programs starts with.
	Defaults map[string]any
	// More describes the resource's routes beyond rule 5's (a person's
	// tokens) into paths.
	More func(d *apiDoc, paths obj)
}

// apiField is one field of a field table.
type apiField struct {
	Name, Label string
	Kind        kind
	Max         int
	Pattern     string
	// Required: a create without it is refused (the form requires it and
	// it has no default).
	Required bool
	// Rows are the fields of one row of a kindRows field.
	Rows []apiField
}

// api is the description of the resource m serves, whose List is l and
// whose collection has the other views named.
func (m *members[T, In]) api(l *listing, views ...string) apiResource {
	_, idempotent := m.store.(onceCreator[T, In])
	a := apiResource{R: m.R, Fields: describeFields(m.fields), Record: reflect.TypeFor[T](),
		Listing: l, Views: slices.Sorted(slices.Values(views)), History: true, Idempotent: idempotent}
	a.Defaults, _ = m.pages.newJSON().(fiber.Map)
	for i, f := range a.Fields {
		if v, ok := a.Defaults[f.Name]; ok && v != "" && v != nil {
			a.Fields[i].Required = false // a create without it takes the default
		}
	}
	return a
}

// describeFields reads a field table.
func describeFields[T any](fs fields[T]) []apiField {
	out := make([]apiField, 0, len(fs))
	for _, f := range fs {
		d := apiField{Name: f.Name, Label: f.Label, Kind: f.Kind, Max: f.Max, Pattern: f.UI.Pattern,
			Required: f.UI.Required}
		if r, ok := f.rows.(interface{ describe() []apiField }); ok {
			d.Rows = r.describe()
		}
		out = append(out, d)
	}
	return out
}

// describe reads the field table of one row.
func (r *rows[T, R]) describe() []apiField { return describeFields(r.fields) }

// The domain's types whose JSON is not what their Go kind says.
var (
	moneyType = reflect.TypeFor[store.Money]()
	timeType  = reflect.TypeFor[time.Time]()
	// apiEnums are the types whose values are a fixed list.
	apiEnums = map[reflect.Type]func() []string{
		reflect.TypeFor[store.Status](): func() []string { return strings.Split(store.StatusNames(), ", ") },
		reflect.TypeFor[store.Role](): func() []string {
			out := make([]string, len(store.Roles))
			for i, r := range store.Roles {
				out[i] = string(r)
			}
			return out
		},
	}
)

// moneyPattern is an amount as JSON writes it: a decimal string with its
// currency's decimals ("350" JPY, "19.99" USD, "1.234" BHD); a request may
// send fewer decimals, or a number.
const (
	moneyPattern   = `^-?[0-9]+(\.[0-9]{1,4})?$`
	moneyInPattern = `^\s*[0-9]+(\.[0-9]{0,4})?\s*$`
	idPattern      = `^[1-9][0-9]{0,17}$`
)

// apiDoc builds the description.
type apiDoc struct {
	schemas obj
}

// ref points at a schema of the components.
func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// orNull lets a schema also be null.
func orNull(s obj) obj { return obj{"anyOf": []any{s, obj{"type": "null"}}} }

// schemaOf is the JSON Schema of what encoding/json writes for t: named
// structs become components (by their Go name), every field without
// omitempty is required, and no other member is allowed.
func (d *apiDoc) schemaOf(t reflect.Type) obj {
	if t == moneyType {
		return obj{"type": "string", "pattern": moneyPattern, "description": "an amount: a decimal string with the currency's decimals (none for JPY, two for USD, three for BHD)"}
	}
	if t == timeType {
		return obj{"type": "string", "format": "date-time"}
	}
	if values, ok := apiEnums[t]; ok {
		return obj{"type": "string", "enum": values()}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return orNull(d.schemaOf(t.Elem()))
	case reflect.String:
		return obj{"type": "string"}
	case reflect.Bool:
		return obj{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return obj{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return obj{"type": "number"}
	case reflect.Slice, reflect.Array:
		return obj{"type": "array", "items": d.schemaOf(t.Elem())}
	case reflect.Map:
		return obj{"type": "object", "additionalProperties": d.schemaOf(t.Elem())}
	case reflect.Struct:
		name := t.Name()
		if _, ok := d.schemas[name]; !ok {
			d.schemas[name] = obj{} // a recursive type refers to itself
			d.schemas[name] = d.structSchema(t)
		}
		return ref(name)
	}
	// An interface: any JSON value, null too.
	return obj{"type": []string{"string", "number", "boolean", "object", "array", "null"}}
}

// structSchema is the object encoding/json writes for struct type t.
func (d *apiDoc) structSchema(t reflect.Type) obj {
	props, required := obj{}, []string{}
	d.structFields(t, props, &required)
	return obj{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// structFields adds the members encoding/json writes for struct type t to
// props and required: an embedded struct without a JSON name gives its
// own members, as encoding/json does.
func (d *apiDoc) structFields(t reflect.Type, props obj, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			d.structFields(f.Type, props, required)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = d.schemaOf(f.Type)
		if !slices.Contains(strings.Split(opts, ","), "omitempty") {
			*required = append(*required, name)
		}
	}
}

// recordFieldType is the Go type of the record's JSON field name, or nil.
func recordFieldType(t reflect.Type, name string) reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if n == name {
			return f.Type
		}
		if f.Anonymous && n == "" && f.Type.Kind() == reflect.Struct {
			if ft := recordFieldType(f.Type, name); ft != nil {
				return ft
			}
		}
	}
	return nil
}

// inputSchema is the JSON object a create or update sends: the field
// table's fields (null is a field not sent); members it does not name are
// ignored. create lists the fields a create must carry. Dotted fields
// (address.city) are the members of an object (address), which may be
// null.
func (d *apiDoc) inputSchema(fs []apiField, record reflect.Type, create bool) obj {
	props, required := obj{}, []string{}
	groups := map[string][]apiField{}
	for _, f := range fs {
		if g, member, ok := strings.Cut(f.Name, "."); ok {
			if groups[g] == nil {
				props[g] = nil // its place; filled below
			}
			f.Name = member
			groups[g] = append(groups[g], f)
			continue
		}
		s := d.fieldSchema(f, record)
		if f.Label != "" {
			s["title"] = f.Label
		}
		props[f.Name] = s
		if create && f.Required {
			required = append(required, f.Name)
		}
	}
	for g, gfs := range groups {
		var rt reflect.Type
		if record != nil {
			rt = recordFieldType(record, g)
		}
		s := d.inputSchema(gfs, rt, create)
		s["type"] = []string{"object", "null"}
		props[g] = s
	}
	s := obj{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// fieldSchema is the JSON a field takes, by its kind; a text field whose
// record field is an enumeration takes its values.
func (d *apiDoc) fieldSchema(f apiField, record reflect.Type) obj {
	switch f.Kind {
	case kindNumber:
		pattern := `^\s*[0-9]+\s*$`
		if f.Pattern != "" {
			pattern = `^\s*(?:` + f.Pattern + `)\s*$`
		}
		return obj{"type": []string{"integer", "string", "null"}, "pattern": pattern, "description": "a whole number, or its digits as a string"}
	case kindMoney:
		return obj{"type": []string{"string", "number", "null"}, "pattern": moneyInPattern, "minimum": 0,
			"description": `an amount: a decimal string with at most the currency's decimals ("350" JPY, "19.99" USD, "1.234" BHD)`}
	case kindVersion:
		return obj{"type": []string{"integer", "null"}, "minimum": 1,
			"description": "the version the client read: a stale one is refused (409)"}
	case kindBool:
		return obj{"type": []string{"boolean", "null"}}
	case kindRows:
		var rt reflect.Type
		if record != nil {
			if t := recordFieldType(record, f.Name); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
				rt = t.Elem()
			}
		}
		return obj{"type": []string{"array", "null"}, "items": orNull(d.inputSchema(f.Rows, rt, false)),
			"description": "replaces every row when sent"}
	}
	s := obj{"type": []string{"string", "null"}}
	if f.Max > 0 {
		s["maxLength"] = f.Max
	}
	if f.Pattern != "" {
		// Text is read trimmed: spaces around the value do not count.
		s["pattern"] = `^\s*(?:` + f.Pattern + `)\s*$`
	}
	if record != nil {
		if values, ok := apiEnums[recordFieldType(record, f.Name)]; ok {
			s["enum"] = append(anyOf(values()), nil)
		}
	}
	return s
}

func anyOf(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// errorSchema is every error's JSON: the message, the request id, and for
// some the messages by field or the stored record (current, on a 409 or
// 412; record nil: any JSON).
func errorSchema(current obj) obj {
	if current == nil {
		current = obj{}
	}
	return obj{"type": "object", "required": []string{"error", "request_id"}, "additionalProperties": false,
		"properties": obj{
			"error":      obj{"type": "string"},
			"request_id": obj{"type": "string"},
			"errors": obj{"type": "object", "additionalProperties": obj{"type": "string"},
				"description": "messages by field; a row's field is rows[N][field], N as sent"},
			"current": current,
		}}
}

// The answers of every operation, as components/responses: status → name.
var apiErrors = map[int]string{
	http.StatusBadRequest:            "BadRequest",
	http.StatusForbidden:             "Forbidden",
	http.StatusNotFound:              "NotFound",
	http.StatusRequestTimeout:        "RequestTimeout",
	http.StatusRequestEntityTooLarge: "TooLarge",
	http.StatusUnsupportedMediaType:  "UnsupportedMediaType",
	http.StatusMisdirectedRequest:    "MisdirectedRequest",
	http.StatusUnprocessableEntity:   "Unprocessable",
	http.StatusTooManyRequests:       "TooManyRequests",
	http.StatusInternalServerError:   "ServerError",
	http.StatusServiceUnavailable:    "Unavailable",
}

// Statuses every operation may answer, and those of writes.
var (
	anyErrors   = []int{400, 403, 404, 408, 421, 429, 500, 503}
	writeErrors = []int{413, 415}
)

// representations is the content of an answer: JSON of schema s, and the
// page or fragment of the same outcome (HTML).
func representations(s obj) obj {
	return obj{"application/json": obj{"schema": s}, "text/html": obj{"schema": obj{"type": "string"}}}
}

// answer is a response of description desc whose JSON is s (nil: none).
func answer(desc string, s obj) obj {
	r := obj{"description": desc}
	if s != nil {
		r["content"] = representations(s)
	}
	return r
}

// responses adds the common errors (and those of writes) to an
// operation's own responses.
func responses(own map[int]obj, write bool) obj {
	out := obj{}
	codes := anyErrors
	if write {
		codes = append(slices.Clone(codes), writeErrors...)
	}
	for _, code := range codes {
		out[strconv.Itoa(code)] = obj{"$ref": "#/components/responses/" + apiErrors[code]}
	}
	out["401"] = obj{"description": "no signed-in person (once an account exists): a token (Authorization: Bearer) or a session is needed; " +
		"WWW-Authenticate: Bearer. A page is sent to /session/new instead (303), htmx there by HX-Redirect",
		"content": representations(ref("Error"))}
	out["406"] = obj{"description": "Accept allows neither HTML nor JSON: plain text",
		"content": obj{"text/plain": obj{"schema": obj{"type": "string"}}}}
	out["405"] = obj{"description": "a known path with another method (Allow lists those it takes)",
		"content": representations(ref("Error"))}
	for code, r := range own {
		out[strconv.Itoa(code)] = r
	}
	return out
}

// header is a request header parameter.
func header(name, desc string, s obj) obj {
	return obj{"name": name, "in": "header", "description": desc, "schema": s}
}

// query is a query parameter.
func query(name, desc string, s obj) obj {
	return obj{"name": name, "in": "query", "description": desc, "schema": s}
}

var idParam = obj{"name": "id", "in": "path", "required": true, "description": "the member's id; any other form is 404",
	"schema": obj{"type": "string", "pattern": idPattern}}

// listQuery is the List's query: the search, the sort, the filters and the page.
func listQuery(a apiResource) []any {
	sorts := make([]any, 0, len(a.Listing.Sorts)+1)
	sorts = append(sorts, "")
	for _, s := range a.Listing.Sorts {
		sorts = append(sorts, string(s))
	}
	ps := []any{
		query("q", "search terms separated by spaces: every term matches ("+a.Listing.SearchHint+")", obj{"type": "string"}),
		query("sort", "the order of the entries; the first is the default; a search answers in match order",
			caseless(obj{"type": "string", "enum": sorts})),
	}
	for _, name := range a.Listing.Params {
		ps = append(ps, query(name, "a filter; empty means every member", filterSchema(a, name)))
	}
	return append(ps,
		query("page", "the page, from 1", obj{"type": "integer"}),
		query("per_page", "entries a page: 25 unless asked, clamped to 1–100", obj{"type": "integer"}))
}

// caseless marks a query value read without regard to case or the spaces
// around it ("CUSTOMER" is "customer"): x-case-insensitive.
func caseless(s obj) obj {
	s["x-case-insensitive"] = true
	s["description"] = "read without regard to case or surrounding spaces"
	return s
}

// datePattern is a date filter's value: YYYY-MM-DD.
var datePattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`

// filterSchema is a List filter's value: the record field of the same
// name gives it (an enumeration's values, true or false); a filter of no
// field is a date (from, to).
func filterSchema(a apiResource, name string) obj {
	t := recordFieldType(a.Record, name)
	switch {
	case t == nil:
		return obj{"type": "string", "pattern": `^$|` + datePattern, "description": "a created date, YYYY-MM-DD, inclusive, in the zone of the tz cookie (an IANA name; UTC without it)"}
	case t.Kind() == reflect.Bool:
		return caseless(obj{"type": "string", "enum": []any{"", "true", "false"}})
	}
	if values, ok := apiEnums[t]; ok {
		return caseless(obj{"type": "string", "enum": append([]any{""}, anyOf(values())...)})
	}
	return obj{"type": "string"}
}

// collectionPage is the JSON of a page of the collection: the entries under the
// resource's plural, then where the page lies.
func collectionPage(plural string, entry obj) obj {
	url := orNull(obj{"type": "string"})
	return obj{"type": "object", "additionalProperties": false,
		"required": []string{plural, "page", "per_page", "total", "total_is_lower_bound", "prev", "next"},
		"properties": obj{
			plural:                 obj{"type": "array", "items": entry},
			"page":                 obj{"type": "integer", "minimum": 1},
			"per_page":             obj{"type": "integer", "minimum": 1, "maximum": store.MaxPerPage},
			"total":                obj{"type": "integer", "minimum": 0},
			"total_is_lower_bound": obj{"type": "boolean", "description": "a search of several terms stopped early: there are at least total"},
			"prev":                 url,
			"next":                 url,
		}}
}

// entrySchema is a List entry: the record without its rows (an order
// without its items; item_count and total say them).
func (d *apiDoc) entrySchema(a apiResource, recordName string) obj {
	rec := d.schemas[recordName].(obj)
	props, required := obj{}, []string{}
	rows := map[string]bool{}
	for _, f := range a.Fields {
		rows[f.Name] = f.Kind == kindRows
	}
	for name, s := range rec["properties"].(obj) {
		if !rows[name] {
			props[name] = s
		}
	}
	for _, name := range rec["required"].([]string) {
		if !rows[name] {
			required = append(required, name)
		}
	}
	return obj{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// versionOnly is a delete's body: the field table's version field (other
// fields are read and ignored).
func (d *apiDoc) versionOnly(a apiResource) obj {
	var fs []apiField
	for _, f := range a.Fields {
		if f.Kind == kindVersion {
			fs = append(fs, f)
		}
	}
	return d.inputSchema(fs, a.Record, false)
}

// op is an operation.
func op(id, summary string, params []any, body obj, resps obj) obj {
	o := obj{"operationId": id, "summary": summary, "responses": resps}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if body != nil {
		o["requestBody"] = obj{"required": true, "content": obj{
			"application/json": obj{"schema": body},
			// Forms send the same fields: rows as rows[N][field].
			fiber.MIMEApplicationForm: obj{"schema": obj{"type": "object"}},
			fiber.MIMEMultipartForm:   obj{"schema": obj{"type": "object"}},
		}}
	}
	return o
}

// paths adds the paths of resource a.
func (d *apiDoc) paths(paths obj, a apiResource) {
	r := a.R
	recName := a.Record.Name()
	rec := d.schemaOf(a.Record)
	entryName := recName + "Entry"
	d.schemas[entryName] = d.entrySchema(a, recName)
	page := collectionPage(r.Plural, ref(entryName))
	create := d.inputSchema(a.Fields, a.Record, true)
	update := d.inputSchema(a.Fields, a.Record, false)
	stale := answer("a stale version: the stored record is current", errorSchema(rec))
	invalid := answer("invalid values: a message by field", errorSchema(nil))
	etag := obj{"ETag": obj{"description": "the member's version and representation; If-Match and If-None-Match take any ETag of the current version",
		"schema": obj{"type": "string"}}}
	ifMatch := header("If-Match", "an ETag of the version the client read: another is refused (412)", obj{"type": "string"})
	ifNoneMatch := header("If-None-Match", "an ETag the client holds: the current version answers 304", obj{"type": "string"})
	title := strings.ToLower(r.Title)
	plural := r.Plural

	createParams := []any{}
	if a.Idempotent {
		createParams = append(createParams, header("Idempotency-Key",
			"the same key within 24 hours answers the first request's result; with another body 422",
			obj{"type": "string", "minLength": 1, "maxLength": store.MaxIdempotencyKey}))
	}
	created := answer("created: Location names the new "+title, rec)
	created["headers"] = obj{"Location": obj{"schema": obj{"type": "string"}}}
	paths[r.Path()] = obj{
		"get": op("list"+r.Title+"s", "the List of "+plural, listQuery(a), nil,
			responses(map[int]obj{200: answer("a page of "+plural, page)}, false)),
		"post": op("create"+r.Title, "create a "+title, createParams, create,
			responses(map[int]obj{201: created, 303: answer("a plain form's create: to the new "+title, nil),
				422: invalid}, true)),
	}
	// The New form's values are where a person starts, not a request: an
	// empty required field among them.
	defaults := d.inputSchema(a.Fields, a.Record, false)["properties"].(obj)
	var noPatterns func(props obj)
	noPatterns = func(props obj) {
		for _, s := range props {
			delete(s.(obj), "pattern")
			if inner, ok := s.(obj)["properties"].(obj); ok {
				noPatterns(inner)
			}
		}
	}
	noPatterns(defaults)
	newForm := obj{"type": "object", "description": "the fields of a new " + title + " and their defaults",
		"properties": defaults}
	paths[r.NewPath()] = obj{"get": op("new"+r.Title, "the New form: the fields and their defaults", nil, nil,
		responses(map[int]obj{200: answer("the New form", newForm)}, false))}
	for _, v := range a.Views {
		full := collectionPage(r.Plural, rec)
		paths[r.ViewPath(v)] = obj{"get": op(v+r.Title+"s", "the "+v+" of "+plural+": the List's query, whole records", listQuery(a), nil,
			responses(map[int]obj{200: answer("a page of "+plural+" with everything they hold", full)}, false))}
	}
	member := r.Path() + "/{id}"
	putSummary, putBody := "change the fields sent; the others are kept", update
	putAnswers := map[int]obj{200: answer("the "+title+" as saved", rec), 303: answer("a plain form's update", nil),
		409: stale, 412: answer("If-Match names another version", errorSchema(rec)), 422: invalid}
	if r.Restores {
		// The undo of a delete: the same URI and method, a body of its own.
		putSummary += `; or, with {"restore": true} alone, bring back a ` + title + ` deleted within the undo window (` + undoWindowWords + `)`
		putBody = obj{"anyOf": []any{update, obj{"type": "object", "additionalProperties": false, "required": []string{"restore"},
			"properties": obj{"restore": obj{"const": true, "description": "bring back the deleted " + title + ": its id, values and history, at the next version"}}}}}
		putAnswers[404] = answer("no such "+title+", or (a restore) none deleted to restore", errorSchema(nil))
		putAnswers[410] = answer("a restore past the undo window", errorSchema(nil))
	}
	shown := answer("the "+title, rec)
	shown["headers"] = etag
	deleteParams := []any{idParam, ifMatch,
		query("version", "the version the client read: a stale one is refused (409)", obj{"type": "integer", "minimum": 1})}
	paths[member] = obj{
		"get": op("get"+r.Title, "a "+title, []any{idParam, ifNoneMatch}, nil,
			responses(map[int]obj{200: shown, 304: obj{"description": "not modified"}}, false)),
		"put": op("update"+r.Title, putSummary, []any{idParam, ifMatch}, putBody,
			responses(putAnswers, true)),
		"delete": op("delete"+r.Title, "delete a "+title, deleteParams, d.versionOnly(a),
			responses(map[int]obj{204: obj{"description": "deleted"}, 200: answer("htmx: deleted (no main content)", nil),
				303: answer("a plain form's delete", nil), 422: answer("a member that may not go (the last admin)", errorSchema(nil)),
				409: stale, 412: answer("If-Match names another version", errorSchema(rec))}, true)),
	}
	// A delete's body is optional: the version, as a plain form sends it.
	paths[member].(obj)["delete"].(obj)["requestBody"].(obj)["required"] = false
	editForm := obj{"type": "object", "required": []string{r.Name}, "description": "the " + title + " and what may change",
		"properties": obj{r.Name: rec}}
	paths[member+"/edit"] = obj{"get": op("edit"+r.Title, "the Edit form", []any{idParam}, nil,
		responses(map[int]obj{200: answer("the Edit form", editForm)}, false))}
	if a.History {
		entry := d.schemaOf(reflect.TypeFor[store.HistoryEntry]())
		history := obj{"type": "object", "additionalProperties": false, "required": []string{"entries", "next"},
			"properties": obj{"entries": obj{"type": "array", "items": entry}, "next": orNull(obj{"type": "string"})}}
		note := d.inputSchema(describeFields(noteFields), nil, true)
		note["required"] = []string{"note"}
		added := answer("the note's entry", entry)
		added["headers"] = obj{"Location": obj{"schema": obj{"type": "string"}}}
		paths[member+"/history"] = obj{
			"get": op("history"+r.Title, "the "+title+"'s history, newest first, 25 a page",
				[]any{idParam, query("before", "the cursor of the entry the page starts after", obj{"type": "string"})}, nil,
				responses(map[int]obj{200: answer("a page of the history", history)}, false)),
			"post": op("note"+r.Title, "add a note to the history", []any{idParam}, note,
				responses(map[int]obj{201: added, 303: answer("a plain form's note", nil), 422: invalid}, true)),
		}
	}
	for view := range r.Exports {
		name := "export" + r.Title + "s" + strings.ToUpper(view[:min(1, len(view))]) + view[min(1, len(view)):]
		paths[r.exportPath(view)] = obj{"get": op(name, "the rows of "+r.Path()+(map[bool]string{true: "/" + view}[view != ""])+
			" for the same query, every page, as CSV (also Accept: text/csv there)", listQuery(a), nil,
			responses(map[int]obj{200: obj{"description": "RFC 4180 CSV with a header row, streamed; an attachment",
				"content": obj{"text/csv": obj{"schema": obj{"type": "string"}}}}}, false))}
	}
	if a.More != nil {
		a.More(d, paths)
	}
	if r.Feed == "" {
		return
	}
	paths[r.EventsPath()] = obj{"get": obj{"operationId": "events" + r.Title + "s",
		"summary":    "live updates of the " + plural + ": created, updated, deleted",
		"parameters": []any{header("Last-Event-ID", "the id of the last event seen: what was missed is sent first", obj{"type": "string"})},
		"responses": obj{"200": obj{"description": "an event stream", "content": obj{"text/event-stream": obj{"schema": obj{"type": "string"}}}},
			"429": obj{"$ref": "#/components/responses/TooManyRequests"}, "503": obj{"$ref": "#/components/responses/Unavailable"}}}}
}

// openAPIDocument is the description of the resources as JSON.
func openAPIDocument(rs ...apiResource) ([]byte, error) {
	d := &apiDoc{schemas: obj{"Error": errorSchema(nil)}}
	paths := obj{}
	var names []string
	for _, a := range rs {
		d.paths(paths, a)
		names = append(names, a.R.Plural)
	}
	d.sessionAPI(paths)
	resps := obj{}
	for code, name := range apiErrors {
		resps[name] = answer(http.StatusText(code), ref("Error"))
	}
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{"title": "Order desk", "version": "1",
			"description": "The JSON of every resource (" + strings.Join(names, ", ") + "). Every GET also answers a full HTML page or, to htmx, a fragment; " +
				"writes also take application/x-www-form-urlencoded and multipart/form-data. See docs/api.md."},
		"paths":      paths,
		"components": obj{"schemas": d.schemas, "responses": resps},
	}
	return json.Marshal(doc)
}

// serveOpenAPI answers GET /openapi.json with the description of rs, made
// once, at start; a client revalidates it by its ETag.
func serveOpenAPI(rs ...apiResource) fiber.Handler {
	body, err := openAPIDocument(rs...)
	if err != nil {
		// Maps of plain values always marshal: this is a bug every test shows.
		panic(fmt.Errorf("the OpenAPI description: %w", err))
	}
	sum := sha256.Sum256(body)
	doc := &asset{tag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, briefCache)
		c.Set(fiber.HeaderETag, doc.tag)
		if inm := c.Get(fiber.HeaderIfNoneMatch); inm != "" && doc.matches(inm) {
			return c.SendStatus(fiber.StatusNotModified)
		}
		c.Set(fiber.HeaderContentType, "application/json; charset=utf-8")
		return c.Send(body)
	}
}
