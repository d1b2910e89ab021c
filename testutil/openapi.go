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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gofiber/fiber/v2"
)

// OpenAPIPath is where an application serves its description.
const OpenAPIPath = "/openapi.json"

// API is a loaded description and the router that finds its operations.
type API struct {
	Doc    *openapi3.T
	router routers.Router
}

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
	return &API{Doc: doc, router: router}, nil
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
	ctx := context.Background()
	route, params, err := a.router.FindRoute(req)
	if err != nil {
		// A path or method the description does not have: only an error
		// may answer it.
		if r.Status < 400 {
			return fmt.Errorf("%s: answered %d, but the OpenAPI description has no operation %s %s (%v)", r.What, r.Status, method, req.URL.Path, err)
		}
		return a.checkError(r)
	}
	readAsTheAppDoes(req, route)
	opts := &openapi3filter.Options{
		SkipSettingDefaults:   true,
		IncludeResponseStatus: true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		ExcludeRequestBody:    !isJSON(b.Type),
		MultiError:            true,
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil && r.Status < 400 && !outOfRange(err) {
		return fmt.Errorf("%s: answered %d to a request the OpenAPI description refuses: %v", r.What, r.Status, err)
	}
	resp := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.Status, Header: r.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true,
			// A compressed body is checked by its uncompressed twin.
			ExcludeResponseBody: r.Header.Get("Content-Encoding") != "" || !isJSON(r.Header.Get("Content-Type"))}}
	resp.SetBodyBytes([]byte(r.Body))
	if err := openapi3filter.ValidateResponse(ctx, resp); err != nil {
		return fmt.Errorf("%s: the answer is not the OpenAPI description's: %v; body:\n%s", r.What, err, Snippet(r.Body))
	}
	return nil
}

// checkError checks an error's JSON body against the description's Error.
func (a *API) checkError(r *Resp) error {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" || r.Header.Get("Content-Encoding") != "" {
		return nil
	}
	s := a.Doc.Components.Schemas["Error"]
	if s == nil {
		return fmt.Errorf("the OpenAPI description has no Error schema")
	}
	var v any
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
		return fmt.Errorf("%s: the error is not JSON: %v", r.What, err)
	}
	if err := s.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("%s: the error is not the OpenAPI description's Error: %v; body:\n%s", r.What, err, Snippet(r.Body))
	}
	return nil
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
