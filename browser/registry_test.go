package browser_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"orders/routes"
	"orders/store"
)

// registryPage is one page every registered resource has.
type registryPage struct{ name, path string }

// registryPages creates a record of every registered resource from its
// example (JSON over HTTP at base) and returns the pages every resource
// has: its List, its New form, the record's page, its Edit form, its
// history and its delete confirmation. The page tests walk them, so a
// registered resource's pages are checked without a list of its own.
func registryPages(t *testing.T, base string) []registryPage {
	t.Helper()
	var pages []registryPage
	for _, r := range routes.Resources() {
		body, err := json.Marshal(r.Example(900))
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, base+r.Path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", r.Path, err)
		}
		resp.Body.Close()
		id, ok := store.ParseID(strings.TrimPrefix(resp.Header.Get("Location"), r.Path+"/"))
		if resp.StatusCode != http.StatusCreated || !ok {
			t.Fatalf("POST %s with its example: %s, Location %q; want 201 and the member", r.Path, resp.Status, resp.Header.Get("Location"))
		}
		pages = append(pages,
			registryPage{r.Plural + "-list", r.Path},
			registryPage{r.Plural + "-new", r.NewPath},
			registryPage{r.Plural + "-show", r.MemberPath(id)},
			registryPage{r.Plural + "-edit", r.EditPath(id)},
			registryPage{r.Plural + "-history", r.HistoryPath(id)},
			registryPage{r.Plural + "-delete-confirm", r.MemberPath(id) + "?confirm=delete"})
	}
	return pages
}
