package testutil

// Every JSON exchange a test has with an application in process is checked
// against the application's own OpenAPI description (GET /openapi.json,
// read once per test binary): a JSON answer must be one the description
// gives for that operation and status, and a request the description
// refuses must be refused by the application (a 4xx). Tests send invalid
// requests on purpose; what they must never see is the application
// accepting one, or answering JSON the description does not promise.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gofiber/fiber/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// OpenAPIPath is where an application serves its description.
const OpenAPIPath = "/openapi.json"

// API is a loaded description, the router that finds its operations and
// its schemas as JSON Schema 2020-12 (OpenAPI 3.1's dialect), each
// compiled the first time a body is checked by it.
type API struct {
	Doc      *openapi3.T
	router   routers.Router
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema
}

// apiURL names the description among the compiler's resources.
const apiURL = "urn:openapi.json"

// LoadAPI reads and validates a description and builds its router.
func LoadAPI(data []byte) (*API, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("loading the OpenAPI description: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the OpenAPI description is not valid: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("routing the OpenAPI description: %w", err)
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	compiler := jsonschema.NewCompiler()
	compiler.DefaultDraft(jsonschema.Draft2020)
	if err := compiler.AddResource(apiURL, raw); err != nil {
		return nil, err
	}
	return &API{Doc: doc, router: router, compiler: compiler, schemas: map[string]*jsonschema.Schema{}}, nil
}

// api is the description every in-process exchange is checked against:
// the first application that serves one gives it (every application of a
// test binary serves the same); apiTried remembers the applications that
// could not (one with a sign-in, say).
var (
	apiMu    sync.Mutex
	api      *API
	apiTried = map[*fiber.App]bool{}
)

// apiOf returns the description to check app's exchanges against, or nil
// when there is none (the application serves none, or not to this test).
func (c *Client) apiOf() (*API, error) {
	apiMu.Lock()
	defer apiMu.Unlock()
	if api != nil || apiTried[c.app] {
		return api, nil
	}
	apiTried[c.app] = true
	req := httptest.NewRequest(http.MethodGet, OpenAPIPath, nil)
	req.Header.Set("Accept", "application/json")
	res, err := c.app.Test(req, -1)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK || res.Header.Get("Content-Encoding") != "" {
		return nil, err
	}
	if api, err = LoadAPI(data); err != nil {
		return nil, err
	}
	return api, nil
}

// isJSON says whether a Content-Type or Accept value names JSON.
func isJSON(v string) bool { return strings.Contains(strings.ToLower(v), "application/json") }

// checkAPI checks one in-process exchange against the description: nil
// when it is not a JSON exchange or it agrees.
func (c *Client) checkAPI(method, target string, b Body, h H, r *Resp) error {
	jsonReq, jsonResp := isJSON(b.Type), isJSON(r.Header.Get("Content-Type"))
	accept := ""
	for k, v := range h {
		if strings.EqualFold(k, "Accept") {
			accept = v
		}
	}
	if !jsonReq && !jsonResp && !isJSON(accept) || method == http.MethodHead {
		return nil
	}
	if u, err := url.Parse(target); err != nil || u.Path == OpenAPIPath {
		return nil
	}
	a, err := c.apiOf()
	if a == nil || err != nil {
		return err
	}
	return a.Check(methodOf(method, b), target, b, h, r)
}

// methodOf is the method a request asks for: a form's POST may say PUT or
// DELETE in _method.
func methodOf(method string, b Body) string {
	if method != http.MethodPost || b.Data == nil {
		return method
	}
	req := httptest.NewRequest(method, "/", bytes.NewReader(b.Data))
	req.Header.Set("Content-Type", b.Type)
	if m := strings.ToUpper(req.PostFormValue("_method")); m == http.MethodPut || m == http.MethodDelete {
		return m
	}
	return method
}

// Check checks one exchange against the description: the answer must be
// one the operation gives (its status, and its JSON body by its schema),
// and a request the operation refuses must have been refused.
func (a *API) Check(method, target string, b Body, h H, r *Resp) error {
	req := httptest.NewRequest(method, target, bytes.NewReader(b.Data))
	if b.Type != "" {
		req.Header.Set("Content-Type", b.Type)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	route, params, err := a.router.FindRoute(req)
	if err != nil {
		// A path or method the description does not have: only an error
		// may answer it.
		if r.Status < 400 {
			return fmt.Errorf("%s: answered %d, but the OpenAPI description has no operation %s %s (%v)", r.What, r.Status, method, req.URL.Path, err)
		}
		return a.checkBody(r, "/components/schemas/Error")
	}
	readAsTheAppDoes(req, route)
	// The parameters by kin-openapi's filter; the bodies by their schemas,
	// each compiled once (the filter compiles a schema at every call).
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{SkipSettingDefaults: true, ExcludeRequestBody: true, MultiError: true,
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	op := "/paths/" + pointerEscape(route.Path) + "/" + strings.ToLower(route.Method)
	refused := openapi3filter.ValidateRequest(context.Background(), in)
	if refused != nil && outOfRange(refused) {
		refused = nil
	}
	if refused == nil && isJSON(b.Type) {
		if route.Operation.RequestBody == nil {
			refused = fmt.Errorf("the operation takes no body")
		} else if err := a.validate(op+"/requestBody/content/application~1json/schema", b.Data); err != nil {
			refused = err
		}
	}
	if refused != nil && r.Status < 400 {
		return fmt.Errorf("%s: answered %d to a request the OpenAPI description refuses: %v", r.What, r.Status, refused)
	}
	code := strconv.Itoa(r.Status)
	resp := route.Operation.Responses.Value(code)
	if resp == nil {
		return fmt.Errorf("%s: answered %d, a status the OpenAPI description does not give for %s %s", r.What, r.Status, route.Method, route.Path)
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		return nil
	}
	if resp.Value == nil || resp.Value.Content.Get("application/json") == nil {
		return fmt.Errorf("%s: answered %d in JSON, which the OpenAPI description does not give for %s %s", r.What, r.Status, route.Method, route.Path)
	}
	at := op + "/responses/" + code
	if resp.Ref != "" {
		at = strings.TrimPrefix(resp.Ref, "#")
	}
	return a.checkBody(r, at+"/content/application~1json/schema")
}

// checkBody checks a JSON answer by the schema at pointer at.
func (a *API) checkBody(r *Resp, at string) error {
	if !isJSON(r.Header.Get("Content-Type")) || r.Header.Get("Content-Encoding") != "" {
		return nil // a compressed body is checked by its uncompressed twin
	}
	if err := a.validate(at, []byte(r.Body)); err != nil {
		return fmt.Errorf("%s: the answer is not the OpenAPI description's (%s): %v; body:\n%s", r.What, at, err, Snippet(r.Body))
	}
	return nil
}

// validate checks JSON data by the schema at pointer at of the description.
func (a *API) validate(at string, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sch, ok := a.schemas[at]
	if !ok {
		if sch, err = a.compiler.Compile(apiURL + "#" + at); err != nil {
			return fmt.Errorf("compiling the schema at %s: %w", at, err)
		}
		a.schemas[at] = sch
	}
	return sch.Validate(v)
}

// pointerEscape escapes a key for a JSON pointer (RFC 6901).
func pointerEscape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// readAsTheAppDoes puts the query values the description marks
// x-case-insensitive in lower case, without the spaces around them: what
// the application reads of them.
func readAsTheAppDoes(req *http.Request, route *routers.Route) {
	q := req.URL.Query()
	changed := false
	for _, p := range route.Operation.Parameters {
		v := p.Value
		if v == nil || v.In != openapi3.ParameterInQuery || v.Schema == nil || v.Schema.Value == nil ||
			v.Schema.Value.Extensions["x-case-insensitive"] != true || !q.Has(v.Name) {
			continue
		}
		for i, s := range q[v.Name] {
			q[v.Name][i] = strings.ToLower(strings.TrimSpace(s))
		}
		changed = true
	}
	if changed {
		req.URL.RawQuery = q.Encode()
	}
}

// outOfRange says whether err is only kin-openapi's reading of an integer
// parameter as an int64: JSON Schema's integers have no bound, and the
// application clamps a page number past it.
func outOfRange(err error) bool {
	var me openapi3.MultiError
	if !errors.As(err, &me) {
		return strings.Contains(err.Error(), "value out of range")
	}
	for _, e := range me {
		if !strings.Contains(e.Error(), "value out of range") {
			return false
		}
	}
	return true
}
