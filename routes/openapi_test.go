package routes

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"orders/store"
	"orders/testutil"
)

// apiOf serves the application's description and loads it with a
// maintained validator (kin-openapi): it must be a valid OpenAPI 3.1
// document.
func apiOf(t *testing.T, a *testApp) *testutil.API {
	t.Helper()
	r := a.get(t, OpenAPIPath, testutil.H{}).WantStatus(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("got Content-Type %q, want application/json; charset=utf-8", ct)
	}
	api, err := testutil.LoadAPI([]byte(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	if api.Doc.OpenAPI != "3.1.0" || !api.Doc.IsOpenAPI31OrLater() {
		t.Errorf("got openapi %q, want 3.1.0", api.Doc.OpenAPI)
	}
	return api
}

func newAPITestApp(t *testing.T) *testApp {
	return newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Targets(t)[0]))
}

// fiberParam is a path parameter as Fiber writes it: /orders/:id<int>.
var fiberParam = regexp.MustCompile(`:([a-z]+)(<[^>]*>)?`)

// TestOpenAPIDescribesEveryResourceRoute: every route a resource registers
// (but its event stream's HEAD) is an operation of the description, so a
// resource added to the registrations is described with no more work.
func TestOpenAPIDescribesEveryResourceRoute(t *testing.T) {
	a := newAPITestApp(t)
	api := apiOf(t, a)
	n := 0
	for _, rt := range a.app.GetRoutes(true) {
		res := resourceOf(rt.Path)
		if rt.Method == http.MethodHead || !(rt.Path == res.Path() || strings.HasPrefix(rt.Path, res.Path()+"/")) {
			continue
		}
		p := fiberParam.ReplaceAllString(rt.Path, "{$1}")
		item := api.Doc.Paths.Find(p)
		if item == nil || item.GetOperation(rt.Method) == nil {
			t.Errorf("%s %s (%s) is not in the OpenAPI description", rt.Method, p, rt.Path)
			continue
		}
		n++
	}
	if n < 10*len(resources) {
		t.Errorf("checked %d resource routes, want at least %d for %d resources", n, 10*len(resources), len(resources))
	}
}

// TestOpenAPIRequestsFollowTheFieldTables: a create's schema is the field
// table's (its limits, its required fields, an enumeration's values).
func TestOpenAPIRequestsFollowTheFieldTables(t *testing.T) {
	api := apiOf(t, newAPITestApp(t))
	body := func(path, method string) map[string]any {
		t.Helper()
		op := api.Doc.Paths.Find(path).GetOperation(method)
		s := op.RequestBody.Value.Content.Get("application/json").Schema.Value
		out := map[string]any{"required": strings.Join(s.Required, ",")}
		for name, p := range s.Properties {
			out[name] = p.Value
		}
		return out
	}
	orders := body("/orders", http.MethodPost)
	if got := orders["required"]; got != "customer" {
		t.Errorf("POST /orders requires %q, want customer (currency has a default)", got)
	}
	if got := *orders["customer"].(*openapi3.Schema).MaxLength; got != store.MaxCustomer {
		t.Errorf("customer maxLength %d, want %d", got, store.MaxCustomer)
	}
	status := orders["status"].(*openapi3.Schema)
	if len(status.Enum) != len(store.Statuses)+1 {
		t.Errorf("status enum %v, want the %d statuses and null", status.Enum, len(store.Statuses))
	}
	if got := body("/orders/{id}", http.MethodPut)["required"]; got != "" {
		t.Errorf("PUT /orders/{id} requires %q, want nothing (it keeps the fields not sent)", got)
	}
	if got := body("/products", http.MethodPost)["required"]; got != "sku,name" {
		t.Errorf("POST /products requires %q, want sku,name", got)
	}
}

// TestOpenAPIIsCacheable: the description has an ETag that answers 304.
func TestOpenAPIIsCacheable(t *testing.T) {
	a := newAPITestApp(t)
	r := a.get(t, OpenAPIPath, testutil.H{}).WantStatus(t, http.StatusOK)
	tag := r.Header.Get("ETag")
	if tag == "" || !strings.Contains(r.Header.Get("Cache-Control"), "max-age") {
		t.Fatalf("got ETag %q, Cache-Control %q: want both", tag, r.Header.Get("Cache-Control"))
	}
	a.get(t, OpenAPIPath, testutil.H{"If-None-Match": tag}).WantStatus(t, http.StatusNotModified)
}

// TestOpenAPICheckCatchesAnAnswerItDoesNotDescribe: the check every JSON
// exchange of the tests goes through fails an answer that is not the
// description's, and a request it refuses that was accepted.
func TestOpenAPICheckCatchesAnAnswerItDoesNotDescribe(t *testing.T) {
	api := apiOf(t, newAPITestApp(t))
	json := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for _, c := range []struct {
		name, method, target string
		body                 testutil.Body
		resp                 testutil.Resp
	}{
		{"a record without its version", http.MethodGet, "/products/1", testutil.NoBody,
			testutil.Resp{Status: 200, Header: json, Body: `{"id":1,"sku":"A","name":"A","unit_price":"1.00","currency":"USD","active":true,"created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z"}`}},
		{"a status no operation answers", http.MethodGet, "/products/1", testutil.NoBody,
			testutil.Resp{Status: 418, Header: json, Body: `{"error":"x","request_id":"1"}`}},
		{"an error without its request id", http.MethodGet, "/products/1", testutil.NoBody,
			testutil.Resp{Status: 404, Header: json, Body: `{"error":"x"}`}},
		{"a customer too long, accepted", http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": strings.Repeat("x", store.MaxCustomer+1)}),
			testutil.Resp{Status: 201, Header: json, Body: `{}`}},
		{"JSON at a path the description lacks", http.MethodGet, "/nowhere", testutil.NoBody,
			testutil.Resp{Status: 200, Header: json, Body: `{}`}},
	} {
		c.resp.What = c.name
		if err := api.Check(c.method, c.target, c.body, testutil.HJSON, &c.resp); err == nil {
			t.Errorf("%s: the check passed, want it to fail", c.name)
		}
	}
}
