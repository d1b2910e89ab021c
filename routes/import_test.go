package routes

// The product import: preview and commit, a bad line that changes
// nothing, the same file twice, the rights, malformed and huge files, and
// the page's upload, preview and Confirm (with the products changed in
// between).

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"orders/store"
	"orders/testutil"
)

// importResult is the JSON of an import.
type importResult struct {
	DryRun    bool   `json:"dry_run"`
	Applied   bool   `json:"applied"`
	Error     string `json:"error"`
	Digest    string `json:"digest"`
	Create    []importLineJSON
	Change    []importLineJSON
	Unchanged []importLineJSON
	Errors    []struct {
		Line    int    `json:"line"`
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
	Fields map[string]string `json:"fields"`
}

type importLineJSON struct {
	Line    int    `json:"line"`
	SKU     string `json:"sku"`
	ID      int64  `json:"id"`
	Changes []struct{ Field, From, To string }
}

func csvBody(s string) testutil.Body { return testutil.Raw("text/csv; charset=utf-8", s) }

// catalogue is every product's SKU with its name, price, currency,
// activity and version.
func catalogue(t testing.TB, a *testApp) map[string]string {
	t.Helper()
	out := map[string]string{}
	for page := 1; ; page++ {
		p, err := a.store.ListProducts(context.Background(), store.ProductQuery{Page: page, PerPage: 100, Sort: "sku"})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range p.Products {
			out[x.SKU] = fmt.Sprintf("%s|%s|%s|%v|v%d", x.Name, x.UnitPrice, x.Currency, x.Active, x.Version)
		}
		if len(p.Products) < 100 {
			return out
		}
	}
}

func importJSONOf(t testing.TB, r *testutil.Resp) importResult {
	t.Helper()
	var out importResult
	r.JSON(t, &out)
	return out
}

func sameCatalogue(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s changed the catalogue:\n got %v\nwant %v", what, got, want)
	}
}

func TestImportPreviewsThenWritesAndTheSameFileTwiceChangesNothing(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		for _, sku := range []string{"KBD-60", "MUG-1"} {
			a.do(t, http.MethodPost, "/products", testutil.JSON(map[string]any{"sku": sku, "name": "Old " + sku, "unit_price": "5.00"}), testutil.HJSON).WantStatus(t, http.StatusCreated)
		}
		file := "sku,name,unit_price,currency,active\n" +
			"kbd-60,\"Keyboard, 60%\",49.90,USD,true\n" + // changes name and price; the SKU matches case aside
			"MUG-1,Old MUG-1,5.00,USD,true\n" + // unchanged
			"NEW-1,\"New \"\"one\"\"\",1.5,eur,false\n"
		before := catalogue(t, a)
		dry := importJSONOf(t, a.do(t, http.MethodPost, "/products?dry_run=1", csvBody(file), testutil.HJSON).WantStatus(t, http.StatusOK))
		if !dry.DryRun || dry.Applied || len(dry.Create) != 1 || len(dry.Change) != 1 || len(dry.Unchanged) != 1 || len(dry.Errors) != 0 {
			t.Fatalf("dry run: %+v", dry)
		}
		if c := dry.Create[0]; c.Line != 4 || c.SKU != "NEW-1" {
			t.Errorf("to create: %+v, want line 4 NEW-1", c)
		}
		ch := dry.Change[0]
		// The file's spelling of a SKU the catalogue has, case aside, is kept.
		if got := fmt.Sprint(ch.Line, ch.Changes); got != "2 [{sku KBD-60 kbd-60} {name Old KBD-60 Keyboard, 60%} {unit_price 5.00 49.90}]" {
			t.Errorf("to change: %s", got)
		}
		sameCatalogue(t, "a dry run", catalogue(t, a), before)

		done := importJSONOf(t, a.do(t, http.MethodPost, "/products", csvBody(file), testutil.HJSON).WantStatus(t, http.StatusOK))
		if !done.Applied || len(done.Create) != 1 || len(done.Change) != 1 {
			t.Fatalf("import: %+v", done)
		}
		after := catalogue(t, a)
		if after["kbd-60"] != "Keyboard, 60%|49.90|USD|true|v2" || after["NEW-1"] != `New "one"|1.50|EUR|false|v1` || after["MUG-1"] != before["MUG-1"] {
			t.Errorf("after the import: %v", after)
		}
		again := importJSONOf(t, a.do(t, http.MethodPost, "/products", csvBody(file), testutil.HJSON).WantStatus(t, http.StatusOK))
		if len(again.Create) != 0 || len(again.Change) != 0 || len(again.Unchanged) != 3 {
			t.Errorf("the same file again: %+v", again)
		}
		sameCatalogue(t, "the same file again", catalogue(t, a), after)
		// A file without some columns keeps the stored values.
		importJSONOf(t, a.do(t, http.MethodPost, "/products", csvBody("SKU,Active\nNEW-1,true\n"), testutil.HJSON).WantStatus(t, http.StatusOK))
		if got := catalogue(t, a)["NEW-1"]; got != `New "one"|1.50|EUR|true|v2` {
			t.Errorf("a file of sku and active: NEW-1 is %s", got)
		}
	})
}

func TestImportWithABadLineChangesNothingAndListsEveryBadLine(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Targets(t)[0]))
	a.do(t, http.MethodPost, "/products", testutil.JSON(map[string]any{"sku": "A-1", "name": "A", "unit_price": "1.00"}), testutil.HJSON).WantStatus(t, http.StatusCreated)
	before := catalogue(t, a)
	file := "sku,name,unit_price,currency,active\n" +
		"A-1,Changed,2.00,USD,true\n" + // fine
		"B-1,B,1.999,USD,true\n" + // line 3: three decimals
		"C-1,,1.00,USD,true\n" + // line 4: a new product without a name
		"bad sku!,D,1.00,USD,true\n" + // line 5
		"E-1,E,1.00,USDX,true\n" + // line 6
		"F-1,F,1.00,USD,maybe\n" + // line 7
		"a-1,again,1.00,USD,true\n" + // line 8: the SKU of line 2
		"G-1,G,1.00,USD,true\n" // fine
	// The dry run answers the plan, bad lines listed by number.
	dry := importJSONOf(t, a.do(t, http.MethodPost, "/products?dry_run=1", csvBody(file), testutil.HJSON).WantStatus(t, http.StatusOK))
	var lines []string
	for _, e := range dry.Errors {
		lines = append(lines, fmt.Sprint(e.Line, ":", e.Field))
	}
	if got := strings.Join(lines, " "); got != "3:unit_price 4:name 5:sku 6:currency 7:active 8:sku" {
		t.Errorf("dry run: errors %s", got)
	}
	if len(dry.Create) != 1 || len(dry.Change) != 1 {
		t.Errorf("dry run: %d to create, %d to change; want 1 and 1 (the good lines)", len(dry.Create), len(dry.Change))
	}
	sameCatalogue(t, "a dry run", catalogue(t, a), before)
	// The import is refused whole: 422, a message by line and column.
	var e errorJSON
	a.do(t, http.MethodPost, "/products", csvBody(file), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity).JSON(t, &e)
	if !strings.Contains(e.Error, "6 lines are bad: nothing was imported") || e.Errors["lines[8][sku]"] != "is on line 2 too" ||
		e.Errors["lines[3][unit_price]"] == "" || len(e.Errors) != 6 {
		t.Errorf("import: error %q, errors %v", e.Error, e.Errors)
	}
	sameCatalogue(t, "a file with bad lines", catalogue(t, a), before)
}

func TestImportRefusesMalformedAndHugeFilesClearly(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Targets(t)[0]))
	many := strings.Builder{}
	many.WriteString("sku,name,unit_price\n")
	for i := range MaxImportLines + 1 {
		fmt.Fprintf(&many, "S-%d,N,1.00\n", i)
	}
	huge := "sku,name,unit_price\n" + strings.Repeat("S-1,"+strings.Repeat("n", 200)+",1.00\n", 6000)
	for _, c := range []struct {
		body   testutil.Body
		status int
		msg    string
	}{
		{csvBody(""), 400, "the file is empty"},
		{csvBody("sku,name\nA,\"unterminated\n"), 400, "line 2"},
		{csvBody("sku,name\nA,B,C\n"), 400, "line 2: wrong number of fields"},
		{csvBody("sku,nom\nA,B\n"), 400, `unknown column`},
		{csvBody("name,unit_price\nA,1.00\n"), 400, "the column sku is required"},
		{csvBody("sku,sku\nA,A\n"), 400, "named twice"},
		{csvBody("sku,name\nA,\xff\xfe\n"), 400, "UTF-8"},
		{csvBody(many.String()), 422, "more than 10,000 products"},
		{csvBody(huge), 413, "larger than 1 MiB"},
		{testutil.Raw("text/plain", "sku\nA\n"), 415, ""},
	} {
		r := a.do(t, http.MethodPost, "/products", c.body, testutil.HJSON).WantStatus(t, c.status)
		if !strings.Contains(r.Body, c.msg) {
			t.Errorf("%s: %s, want it to say %q", r, r.Body, c.msg)
		}
	}
	if n := len(catalogue(t, a)); n != 0 {
		t.Errorf("%d products made by refused files", n)
	}
}

func TestImportIsTheManagersOnly(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Targets(t)[0]))
	addAccount(t, a.store, "root", store.RoleAdmin)
	addAccount(t, a.store, "cleo", store.RoleClerk)
	addAccount(t, a.store, "max", store.RoleManager)
	file := "sku,name,unit_price\nA-1,A,1.00\n"
	as := func(name string) *testApp {
		b := &testApp{target: a.target, app: a.app, store: a.store}
		if name != "" {
			b.session = a.signIn(t, name)
		}
		return b
	}
	for _, target := range []string{"/products", "/products?dry_run=1"} {
		as("cleo").do(t, http.MethodPost, target, csvBody(file), testutil.HJSON).WantStatus(t, http.StatusForbidden)
		as("").do(t, http.MethodPost, target, csvBody(file), testutil.HJSON).WantStatus(t, http.StatusUnauthorized)
	}
	as("cleo").get(t, "/products/import", testutil.HPage).WantStatus(t, http.StatusForbidden)
	as("cleo").get(t, "/products", testutil.HPage).WantStatus(t, http.StatusOK).WantLacks(t, "Import CSV")
	if n := len(catalogue(t, a)); n != 0 {
		t.Errorf("%d products made by refused imports", n)
	}
	as("max").do(t, http.MethodPost, "/products", csvBody(file), testutil.HJSON).WantStatus(t, http.StatusOK)
	as("max").get(t, "/products", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, `href="/products/import">Import CSV</a>`)
}

// fileUpload is the page's upload form: the file as the field file.
func fileUpload(name, content string) testutil.Body {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	f, _ := w.CreateFormFile("file", name)
	f.Write([]byte(content))
	w.Close()
	return testutil.Body{Type: w.FormDataContentType(), Data: buf.Bytes()}
}

// hiddenValue is the value of the hidden input name in page (html-unescaped).
func hiddenValue(t testing.TB, page, name string) string {
	t.Helper()
	i := strings.Index(page, `name="`+name+`" value="`)
	if i < 0 {
		t.Fatalf("no hidden %s in the page", name)
	}
	v := page[i+len(`name="`+name+`" value="`):]
	v = v[:strings.IndexByte(v, '"')]
	return html.UnescapeString(v)
}

func TestImportPageUploadPreviewAndConfirm(t *testing.T) {
	a := newTestApp(t, "miniredis", testutil.NewStore(t, testutil.Targets(t)[0]))
	a.do(t, http.MethodPost, "/products", testutil.JSON(map[string]any{"sku": "KBD-60", "name": "Keyboard", "unit_price": "5.00"}), testutil.HJSON).WantStatus(t, http.StatusCreated)
	a.get(t, "/products", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, `href="/products/import">Import CSV</a>`)
	a.get(t, "/products/import", testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, "product-import").
		WantContains(t, `enctype="multipart/form-data"`, `type="file" id="import-file" name="file"`)
	file := "sku,name,unit_price\r\nKBD-60,\"Keyboard, \"\"60%\"\"\",49.90\r\nNEW-1,=New,1.00\r\n"
	before := catalogue(t, a)
	prev := a.do(t, http.MethodPost, "/products/import", fileUpload("p.csv", file), testutil.HPage).WantStatus(t, http.StatusOK).
		WantContains(t, "1 to create, 1 to change, 0 unchanged", "<del>5.00</del> → <ins>49.90</ins>", "<del>Keyboard</del> → <ins>Keyboard, &#34;60%&#34;</ins>",
			`<code>NEW-1</code>`, "Confirm: import 1 new and 1 changed")
	sameCatalogue(t, "the preview", catalogue(t, a), before)
	csvField, digest := hiddenValue(t, prev.Body, "csv"), hiddenValue(t, prev.Body, "digest")
	if csvField != strings.ReplaceAll(file, "\r\n", "\n") {
		t.Fatalf("the Confirm carries %q, want the file %q", csvField, file)
	}
	// Someone changes the product between the preview and the Confirm:
	// nothing is written, and the new preview shows.
	a.do(t, http.MethodPut, "/products/1", testutil.JSON(map[string]any{"name": "Keyboard II"}), testutil.HJSON).WantStatus(t, http.StatusOK)
	changed := catalogue(t, a)
	a.do(t, http.MethodPost, "/products/import", testutil.Form("csv", csvField, "digest", digest, "confirm", "1"), testutil.HPage).
		WantStatus(t, http.StatusConflict).WantContains(t, "changed since the preview", "<del>Keyboard II</del>")
	sameCatalogue(t, "a stale Confirm", catalogue(t, a), changed)
	// A Confirm whose file was altered is refused too.
	a.do(t, http.MethodPost, "/products/import", testutil.Form("csv", csvField+"X-1,X,1.00\r\n", "digest", digest, "confirm", "1"), testutil.HPage).
		WantStatus(t, http.StatusConflict)
	sameCatalogue(t, "an altered Confirm", catalogue(t, a), changed)
	// Preview again, confirm: written, then back to the List with a notice.
	prev = a.do(t, http.MethodPost, "/products/import", fileUpload("p.csv", file), testutil.HPage).WantStatus(t, http.StatusOK)
	// A browser sends the hidden copy back with \r\n line ends: the same file.
	r := a.do(t, http.MethodPost, "/products/import", testutil.Form("csv", strings.ReplaceAll(hiddenValue(t, prev.Body, "csv"), "\n", "\r\n"), "digest", hiddenValue(t, prev.Body, "digest"), "confirm", "1"), testutil.HPage).
		WantStatus(t, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != "/products" {
		t.Errorf("Confirm: Location %q, want /products", loc)
	}
	after := catalogue(t, a)
	if after["KBD-60"] != `Keyboard, "60%"|49.90|USD|true|v3` || after["NEW-1"] != "=New|1.00|USD|true|v1" {
		t.Errorf("after the Confirm: %v", after)
	}
	// A bad file shows its lines and no Confirm; a file that is not CSV says so.
	a.do(t, http.MethodPost, "/products/import", fileUpload("p.csv", "sku,name,unit_price\nZ-1,,1.00\n"), testutil.HPage).
		WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "<td>2</td><td>name</td><td>is required</td>").WantLacks(t, "Confirm:")
	a.do(t, http.MethodPost, "/products/import", fileUpload("p.csv", "sku,\"name\nZ"), testutil.HPage).
		WantStatus(t, http.StatusBadRequest).WantPage(t, "product-import").WantContains(t, "The file was not imported: line")
	a.do(t, http.MethodPost, "/products/import", testutil.Multipart("x", "y"), testutil.HPage).
		WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, "Choose a CSV file")
}

func TestImportOfTenThousandLines(t *testing.T) {
	testutil.Long(t)
	for _, tg := range testutil.Targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			a := newTestApp(t, tg.Name, testutil.NewStore(t, tg))
			var b strings.Builder
			b.WriteString("sku,name,unit_price,currency,active\n")
			for i := range MaxImportLines {
				fmt.Fprintf(&b, "BULK-%05d,Bulk product %d,%d.%02d,USD,true\n", i, i, i%500, i%100)
			}
			start := time.Now()
			res := importJSONOf(t, a.do(t, http.MethodPost, "/products", csvBody(b.String()), testutil.HJSON).WantStatus(t, http.StatusOK))
			took := time.Since(start)
			if len(res.Create) != MaxImportLines {
				t.Fatalf("%d created, want %d", len(res.Create), MaxImportLines)
			}
			start = time.Now()
			again := importJSONOf(t, a.do(t, http.MethodPost, "/products", csvBody(b.String()), testutil.HJSON).WantStatus(t, http.StatusOK))
			t.Logf("%s: %d lines imported in %v; the same file again (%d unchanged) in %v", tg.Name, MaxImportLines, took, len(again.Unchanged), time.Since(start))
		})
	}
}
