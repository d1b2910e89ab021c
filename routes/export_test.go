package routes

// The CSV exports: each checked row by row and cell by cell against the
// JSON List of the same query (every page of it), with formula-like cells
// defused, commas, quotes and line breaks quoted, the filters honoured,
// Accept negotiated, and the List's rights.

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/testutil"
)

// readExport parses a CSV answer: its header and rows.
func readExport(t testing.TB, r *testutil.Resp) (header []string, rows [][]string) {
	t.Helper()
	cr := csv.NewReader(strings.NewReader(r.Body))
	all, err := cr.ReadAll()
	if err != nil {
		t.Fatalf("%s: not CSV: %v", r, err)
	}
	if len(all) == 0 {
		t.Fatalf("%s: no header row", r)
	}
	return all[0], all[1:]
}

// flatJSON flattens one JSON entry as the export names its columns:
// objects' members as "address.city", lists left out except expand, whose
// elements become one flat entry each (the record's members repeated);
// null and absent are "".
func flatJSON(entry map[string]any, expand string) []map[string]string {
	flat := map[string]string{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			switch v := v.(type) {
			case map[string]any:
				walk(prefix+k+".", v)
			case []any:
			case nil:
				flat[prefix+k] = ""
			case string:
				flat[prefix+k] = v
			case json.Number:
				flat[prefix+k] = v.String()
			case bool:
				flat[prefix+k] = strconv.FormatBool(v)
			}
		}
	}
	walk("", entry)
	elems, _ := entry[expand].([]any)
	if expand == "" || len(elems) == 0 {
		return []map[string]string{flat}
	}
	var out []map[string]string
	for _, e := range elems {
		row := copyFlat(flat)
		for k, v := range e.(map[string]any) {
			switch v := v.(type) {
			case string:
				row[expand+"."+k] = v
			case json.Number:
				row[expand+"."+k] = v.String()
			}
		}
		out = append(out, row)
	}
	return out
}

func copyFlat(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// jsonRows walks every page of the JSON List at path?query (per_page 100)
// and flattens its entries.
func jsonRows(t testing.TB, a *testApp, path, query, plural, expand string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for page := 1; ; page++ {
		v, _ := url.ParseQuery(query)
		v.Set("page", strconv.Itoa(page))
		v.Set("per_page", "100")
		r := a.get(t, path+"?"+v.Encode(), testutil.HJSON).WantStatus(t, http.StatusOK)
		d := json.NewDecoder(bytes.NewReader([]byte(r.Body)))
		d.UseNumber()
		var body map[string]any
		if err := d.Decode(&body); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		for _, e := range body[plural].([]any) {
			out = append(out, flatJSON(e.(map[string]any), expand)...)
		}
		if body["next"] == nil {
			return out
		}
	}
}

// defused is what an export must write for the text s: s itself, or s
// after an apostrophe when a spreadsheet would run it as a formula.
func defused(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// wantExportMatchesList fetches the export of path?query and checks it
// against the JSON List of the same query: the same rows in the same
// order, every JSON member a column, every cell the JSON value (defused).
func wantExportMatchesList(t testing.TB, a *testApp, path, query, plural, expand string) int {
	t.Helper()
	target := path + ".csv"
	if query != "" {
		target += "?" + query
	}
	r := a.get(t, target, testutil.H{}).WantStatus(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Fatalf("%s: Content-Type %q, want text/csv; charset=utf-8", r, ct)
	}
	if cd := r.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="`) || !strings.HasSuffix(cd, `.csv"`) {
		t.Errorf("%s: Content-Disposition %q, want an attachment named *.csv", r, cd)
	}
	header, rows := readExport(t, r)
	want := jsonRows(t, a, path, query, plural, expand)
	if len(rows) != len(want) {
		t.Fatalf("%s: %d rows, the JSON List has %d", r, len(rows), len(want))
	}
	for i, w := range want {
		for k := range w {
			if !slices.Contains(header, k) {
				t.Fatalf("%s: the JSON member %q is no column of %v", r, k, header)
			}
		}
		for j, col := range header {
			if got, exp := rows[i][j], defused(w[col]); got != exp {
				t.Fatalf("%s: row %d, column %s: got %q, want %q (the JSON List's)", r, i+1, col, got, exp)
			}
		}
	}
	return len(rows)
}

// exportOrders makes n orders with awkward text: formula-like names,
// commas, quotes, line breaks in notes, items with such SKUs and names, a
// mix of statuses and of item counts (none too).
func exportOrders(t testing.TB, a *testApp, n int) {
	t.Helper()
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(7, 7))
	names := []string{"=HYPERLINK(\"http://x\")", "+1 555", "-2+3", "@SUM(A1)", `Smith, "Bob"`, "Ada Lovelace", "Grace B. Hopper", "Zoë Ünal"}
	notes := []string{"", "two\nlines", "a, b; \"c\"", "=cmd|' /C calc'!A0", "\ttabbed"}
	for i := range n {
		s := func(v string) *string { return &v }
		in := store.OrderInput{Customer: s(names[i%len(names)]), Email: s(""), Notes: s(notes[i%len(notes)]), HasItems: true}
		if i%3 == 1 {
			in.Currency = s("EUR")
		}
		for j := range i % 4 {
			in.Items = append(in.Items, store.ItemInput{SKU: []string{"KBD-60", "-X", "MUG.2"}[j%3],
				Name: []string{"Keyboard, 60%", "=1+1", "Mug \"big\""}[j%3], Quantity: strconv.Itoa(1 + rnd.IntN(5)), UnitPrice: "19.99"})
		}
		o, err := a.store.CreateOrder(ctx, in)
		if err != nil {
			t.Fatalf("create order %d: %v", i, err)
		}
		// Drafts without items stay pending: confirming needs an item.
		if i%5 == 2 && len(in.Items) > 0 {
			if _, err := a.store.UpdateOrder(ctx, o.ID, store.OrderInput{Status: s("confirmed")}, 0); err != nil {
				t.Fatalf("confirm order %d: %v", o.ID, err)
			}
		}
	}
}

func TestExportMatchesTheJSONListRowByRow(t *testing.T) {
	n := testutil.Pick(230, 230)
	eachTarget(t, func(t *testing.T, a *testApp) {
		exportOrders(t, a, n)
		for _, q := range []string{"", "status=confirmed", "sort=customer", "sort=-total&status=pending", "q=ada",
			"q=kbd", "q=smith+bob", "from=2000-01-01&to=2999-12-31&sort=updated", "to=2000-01-01", "status=delivered",
			"page=3&per_page=7"} {
			got := wantExportMatchesList(t, a, "/orders", q, "orders", "")
			if q == "" && got != n {
				t.Errorf("/orders.csv: %d rows, want every order (%d)", got, n)
			}
			wantExportMatchesList(t, a, "/orders/inquiry", q, "orders", "items")
		}
		for i := range 30 {
			a.do(t, http.MethodPost, "/products", testutil.JSON(map[string]any{"sku": "SKU-" + strconv.Itoa(i),
				"name": []string{"=bad()", "Plain, with comma", "Quote \"q\""}[i%3], "unit_price": "1.50"}), testutil.HJSON).WantStatus(t, http.StatusCreated)
		}
		for _, q := range []string{"", "sort=-name", "q=sku-1", "active=false"} {
			wantExportMatchesList(t, a, "/products", q, "products", "")
		}
		for i := range 12 {
			a.do(t, http.MethodPost, "/customers", testutil.JSON(map[string]any{"name": []string{"@home Ltd", "Doe, Jane", "Line \"One\""}[i%3] + " " + strconv.Itoa(i),
				"address": map[string]any{"city": "-Berlin", "country": "DE"}}), testutil.HJSON).WantStatus(t, http.StatusCreated)
		}
		for _, q := range []string{"", "sort=-name", "q=doe"} {
			wantExportMatchesList(t, a, "/customers", q, "customers", "")
		}
	})
}

func TestExportDefusesFormulasAndQuotesCells(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Targets(t)[0]))
	exportOrders(t, a, 8)
	r := a.get(t, "/orders.csv?sort=created", testutil.H{}).WantStatus(t, http.StatusOK)
	// The raw bytes: RFC 4180 quoting of commas, quotes and line breaks,
	// and the apostrophe before each formula-like cell.
	for _, want := range []string{`,"'=HYPERLINK(""http://x"")",`, `,'+1 555,`, `,'-2+3,`, `,'@SUM(A1),`,
		`,"Smith, ""Bob""",`, "\"two\r\nlines\"", "\r\n2,", `,'=cmd|' /C calc'!A0,`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("/orders.csv lacks %q:\n%s", want, r.Body)
		}
	}
	header, rows := readExport(t, r)
	if want := []string{"id", "customer", "email", "status", "currency", "notes"}; !slices.Equal(header[:len(want)], want) {
		t.Errorf("header %v, want it to start %v", header, want)
	}
	if len(rows) != 8 {
		t.Errorf("%d rows, want 8", len(rows))
	}
	// The Inquiry: a row per item, an order without items on a row of its own.
	r = a.get(t, "/orders/inquiry.csv?sort=created", testutil.H{}).WantStatus(t, http.StatusOK)
	header, rows = readExport(t, r)
	if !slices.Contains(header, "items.sku") || !slices.Contains(header, "items.line_total") {
		t.Errorf("inquiry header %v lacks the items' columns", header)
	}
	// Orders 0 to 7 have 0, 1, 2, 3, 0, 1, 2, 3 items: 14 rows.
	if len(rows) != 14 {
		t.Errorf("inquiry: %d rows, want 14", len(rows))
	}
	if !strings.Contains(r.Body, `"'=1+1"`) && !strings.Contains(r.Body, `,'=1+1,`) {
		t.Errorf("inquiry: the item name =1+1 is not defused:\n%s", r.Body)
	}
}

func TestExportNegotiatesAcceptAndRefusesBadQueries(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Targets(t)[0]))
	exportOrders(t, a, 3)
	for _, c := range []struct {
		target, accept string
		status         int
		csv            bool
	}{
		{"/orders", "text/csv", 200, true},
		{"/orders", "text/csv, */*;q=0.1", 200, true},
		{"/orders?status=pending", "text/csv;q=0.9, application/json;q=0.5", 200, true},
		{"/orders/inquiry", "text/csv", 200, true},
		{"/products", "text/csv", 200, true},
		{"/customers", "text/csv", 200, true},
		{"/orders", "text/html, text/csv", 200, false},
		{"/orders", "application/json;q=1, text/csv;q=0.5", 200, false},
		{"/orders", "*/*", 200, false},
		{"/orders", "application/xml", 406, false},
		{"/orders/new", "text/csv", 406, false},
		{"/orders/1", "text/csv", 406, false},
		{"/orders", "text/csv;q=0", 406, false},
		{"/orders?status=lost", "text/csv", 400, false},
		{"/orders.csv?sort=nope", "", 400, false},
		{"/orders.csv?from=yesterday", "", 400, false},
		{"/products.csv?active=maybe", "", 400, false},
	} {
		r := a.get(t, c.target, testutil.H{"Accept": c.accept}).WantStatus(t, c.status)
		isCSV := strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv")
		if isCSV != c.csv {
			t.Errorf("GET %s Accept %q: Content-Type %q, want CSV %v", c.target, c.accept, r.Header.Get("Content-Type"), c.csv)
		}
		if c.csv && !strings.Contains(r.Header.Get("Vary"), "Accept") {
			t.Errorf("GET %s Accept %q: Vary %q lacks Accept", c.target, c.accept, r.Header.Get("Vary"))
		}
	}
	// The List links its export with its query, page and page size left out.
	a.get(t, "/orders?status=pending&q=555&sort=customer&page=1&per_page=50", testutil.HPage).WantStatus(t, http.StatusOK).
		WantContains(t, `href="/orders.csv?q=555&amp;sort=customer&amp;status=pending" download>Export 1 order (CSV)</a>`)
	a.get(t, "/orders/inquiry", testutil.HPage).WantStatus(t, http.StatusOK).
		WantContains(t, `href="/orders/inquiry.csv" download>Export 3 orders with their items (CSV)</a>`)
	a.get(t, "/products", testutil.HPage).WantStatus(t, http.StatusOK).WantLacks(t, "/products.csv")
	// A query the List refuses is refused in JSON when JSON is asked for.
	r := a.get(t, "/orders.csv?status=lost", testutil.HJSON).WantStatus(t, http.StatusBadRequest)
	if !strings.Contains(r.Body, "status must be one of") {
		t.Errorf("%s: %s", r, r.Body)
	}
}

func TestExportNeedsTheRightToReadTheList(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Targets(t)[0]))
	exportOrders(t, a, 2)
	addAccount(t, a.store, "root", store.RoleAdmin)
	addAccount(t, a.store, "vera", store.RoleViewer)
	for _, p := range []string{"/orders", "/products", "/customers"} {
		list := a.get(t, p, testutil.HJSON)
		exp := a.get(t, p+".csv", testutil.HJSON)
		if list.Status == http.StatusOK || exp.Status != list.Status {
			t.Errorf("signed out: GET %s.csv answered %d, its List %d (want the same refusal)", p, exp.Status, list.Status)
		}
		if strings.HasPrefix(exp.Header.Get("Content-Type"), "text/csv") {
			t.Errorf("signed out: GET %s.csv sent CSV", p)
		}
	}
	v := &testApp{target: a.target, app: a.app, store: a.store}
	v.session = a.signIn(t, "vera")
	for _, p := range []string{"/orders.csv", "/orders/inquiry.csv", "/products.csv", "/customers.csv"} {
		v.get(t, p, testutil.H{}).WantStatus(t, http.StatusOK)
	}
}

func TestExportOfManyOrdersMatchesTheList(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		if tg.Name == "miniredis" {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			a := newTestApp(t, tg.Name, testutil.NewStore(t, tg))
			if c, ok := tg.Client.(*redis.Client); ok {
				// 100,000 orders' keys, gone in pipelined batches before the
				// target's own clean-up (which unlinks one key a round trip).
				t.Cleanup(func() { unlinkPrefix(t, c, tg.Prefix) })
			}
			const n = 100_000
			if _, err := a.store.Seed(context.Background(), n, rand.New(rand.NewPCG(1, 2))); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"", "status=shipped&sort=-total"} {
				got := wantExportMatchesList(t, a, "/orders", q, "orders", "")
				if q == "" && got != n {
					t.Errorf("%d rows, want %d", got, n)
				}
			}
		})
	}
}

// unlinkPrefix deletes the keys of one Redis that start with prefix, a
// thousand a round trip.
func unlinkPrefix(t testing.TB, c *redis.Client, prefix string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	flush := func() {
		if len(batch) > 0 {
			if err := c.Unlink(ctx, batch...).Err(); err != nil {
				t.Errorf("unlink: %v", err)
			}
			batch = batch[:0]
		}
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			flush()
		}
	}
	flush()
	if err := iter.Err(); err != nil {
		t.Errorf("scan: %v", err)
	}
}
