package main

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"orders/testutil"
)

// WalkEnv names the variable that runs TestWalkOfAnEditFormSave: "base"
// runs everything but the measured save, "save" runs it too. docs/walk.sh
// runs the test three times each way, built with coverage, and compares
// the counters the processes leave.
const WalkEnv = "ORDERS_WALK"

// walkLength is how long each run of TestWalkOfAnEditFormSave serves.
const walkLength = 1500 * time.Millisecond

// TestWalkOfAnEditFormSave is one save of the order edit form and what
// leads up to it: the program as `go run .` starts it, on the embedded
// store, one order created, its edit form fetched and saved once to warm
// everything up, fetched again, and then (ORDERS_WALK=save) saved exactly
// as htmx sends it from the browser. Whatever a "save" run executed more
// often than a "base" run is the walk of that one request.
//
// A test binary cannot clear or write its coverage counters before it
// exits (runtime/coverage learns the counter mode only when it writes
// the meta-data, which a test binary does at exit), hence runs of both
// kinds.
func TestWalkOfAnEditFormSave(t *testing.T) {
	mode := os.Getenv(WalkEnv)
	if mode != "base" && mode != "save" {
		testutil.Skip(t, "the walk of one request is measured by docs/walk.sh (set "+WalkEnv+"=base or save)")
	}
	if testing.CoverMode() != "atomic" {
		t.Fatalf("the walk needs a build with -cover -covermode=atomic (docs/walk.sh), not cover mode %q", testing.CoverMode())
	}
	base, stop := startRun(t, "-data", "")
	// Every run ends at the same time after the start, so that the
	// program's timers (the log's flush, the embedded store's TTL tick)
	// fire about as often in each.
	end := time.Now().Add(walkLength)
	id := createOrder(t, base, "Ada Lovelace")
	member := base + "/orders/" + strconv.FormatInt(id, 10)

	// One client, so every request after the first reuses its connection:
	// the measured one is a request, not a connection.
	client := &http.Client{Timeout: 10 * time.Second}
	save(t, client, base, member, "warming up")
	form := editForm(t, client, member)
	form.Set("notes", "measured")
	if mode == "save" {
		if status := put(t, client, base, member, form); status != http.StatusOK {
			t.Fatalf("the measured save answered %d, want 200", status)
		}
	}
	if time.Now().After(end) {
		t.Fatalf("the requests took longer than %v: the runs cannot be compared", walkLength)
	}
	time.Sleep(time.Until(end))
	client.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// save reads member's edit form and sends it back with notes changed.
func save(t *testing.T, client *http.Client, base, member, notes string) {
	t.Helper()
	form := editForm(t, client, member)
	form.Set("notes", notes)
	if status := put(t, client, base, member, form); status != http.StatusOK {
		t.Fatalf("saving the edit form answered %d, want 200", status)
	}
}

var (
	formRE     = regexp.MustCompile(`(?s)<form id="order-edit".*?</form>`)
	controlRE  = regexp.MustCompile(`(?s)<(input|select|textarea)\b([^>]*)>`)
	attrRE     = regexp.MustCompile(`(?s)([a-z_-]+)(?:="([^"]*)")?`)
	selectedRE = regexp.MustCompile(`(?s)<option value="([^"]*)"[^>]*\bselected\b`)
)

// editForm fetches member's edit page and returns what its form submits:
// every named input, select and textarea with its value, in document
// order, as the browser's FormData has them.
func editForm(t *testing.T, client *http.Client, member string) url.Values {
	t.Helper()
	resp, err := client.Get(member + "/edit")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/edit: %d %v", member, resp.StatusCode, err)
	}
	page := string(b)
	f := formRE.FindString(page)
	if f == "" {
		t.Fatalf("no form#order-edit in the edit page:\n%s", page)
	}
	form := url.Values{}
	for _, m := range controlRE.FindAllStringSubmatchIndex(f, -1) {
		tag, attrs := f[m[2]:m[3]], map[string]string{}
		for _, a := range attrRE.FindAllStringSubmatch(f[m[4]:m[5]], -1) {
			attrs[a[1]] = html.UnescapeString(a[2])
		}
		name, ok := attrs["name"]
		if !ok {
			continue
		}
		rest := f[m[1]:]
		switch tag {
		case "input":
			form.Add(name, attrs["value"])
		case "select":
			end := strings.Index(rest, "</select>")
			if s := selectedRE.FindStringSubmatch(rest[:end]); s != nil {
				form.Add(name, html.UnescapeString(s[1]))
			}
		case "textarea":
			form.Add(name, html.UnescapeString(strings.TrimPrefix(rest[:strings.Index(rest, "</textarea>")], "\n")))
		}
	}
	if form.Get("version") == "" || form.Get("items[0][name]") == "" {
		t.Fatalf("the edit form has no version or no first item: %v", form)
	}
	return form
}

// put sends form as htmx 4 sends the edit form from Chromium: hx-put with
// the form's fields URL-encoded, htmx's own headers (the form as source,
// main as target) and the browser's.
func put(t *testing.T, client *http.Client, base, member string, form url.Values) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, member, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"Content-Type":    "application/x-www-form-urlencoded;charset=UTF-8",
		"Accept":          "text/html",
		"Accept-Encoding": "gzip, deflate, br, zstd",
		"Accept-Language": "en-US,en;q=0.9",
		"HX-Request":      "true",
		"HX-Request-Type": "partial",
		"HX-Source":       "form#order-edit",
		"HX-Target":       "main#main",
		"HX-Current-URL":  member + "/edit",
		"Origin":          base,
		"Referer":         member + "/edit",
		"Sec-Fetch-Site":  "same-origin",
		"Sec-Fetch-Mode":  "cors",
		"Sec-Fetch-Dest":  "empty",
		"User-Agent":      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
	} {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}
