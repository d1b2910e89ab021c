package routes

// Import of products from CSV: POST /products with Content-Type text/csv
// (columns sku, name, unit_price, currency, active, in any order; only sku
// is required) creates the SKUs the catalogue lacks and changes those it
// has, each through the one write path. ?dry_run=1 answers what would
// happen and changes nothing. The Products page offers the same through
// /products/import: upload, preview, Confirm.
//
// Every line is checked before anything is written: when any line is bad,
// the whole file is refused and every bad line is listed by its number. A
// change carries the version the plan read, so a product changed between
// the plan and its write is refused (the rest of the file is written; the
// answer names that line). A line that changes nothing writes nothing:
// the same file twice changes nothing the second time.
//
// The page's Confirm carries the file itself and a digest of the plan it
// previewed (the file and the id and version of every product it
// matched); the confirm plans again and refuses, showing the new
// preview, when the digest differs: what is written is what was shown.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// MaxImportLines bounds the products of one import file.
const MaxImportLines = 10_000

// importColumns are the columns an import file may have, sku first.
var importColumns = []string{"sku", "name", "unit_price", "currency", "active"}

// importChange is one field a line changes, from the stored value to the
// file's.
type importChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// importLine is one line of the file as planned.
type importLine struct {
	// Line is its line number in the file (the header is line 1).
	Line int    `json:"line"`
	SKU  string `json:"sku"`
	// ID and Version are the product it changes (0 on a create).
	ID      int64 `json:"id,omitempty"`
	Version int64 `json:"version,omitempty"`
	// Product is the product as the line leaves it.
	Product *store.Product `json:"product,omitempty"`
	// Changes are the fields a change sets, each from → to.
	Changes []importChange `json:"changes,omitempty"`
	in      store.ProductInput
}

// importError is what is wrong with one line (Line 0: the file).
type importError struct {
	Line    int    `json:"line"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// importPlan is what a file would do, or did.
type importPlan struct {
	DryRun    bool          `json:"dry_run"`
	Applied   bool          `json:"applied"`
	Create    []importLine  `json:"create"`
	Change    []importLine  `json:"change"`
	Unchanged []importLine  `json:"unchanged"`
	Errors    []importError `json:"errors"`
	// Digest names the file and every product version the plan read: a
	// confirm with another digest is refused.
	Digest string `json:"digest"`
	// CSV is the file, carried by the page's Confirm.
	csv string
}

// Lines is the number of the file's products.
func (p *importPlan) Lines() int { return len(p.Create) + len(p.Change) + len(p.Unchanged) }

// Ready says the plan can be confirmed: no error and something to write.
func (p *importPlan) Ready() bool { return len(p.Errors) == 0 && len(p.Create)+len(p.Change) > 0 }

// CSV is the file the plan was made from.
func (p *importPlan) CSV() string { return p.csv }

// importBadRequest is a file that cannot be read as CSV.
func importBadRequest(format string, args ...any) error {
	return fiber.NewError(fiber.StatusBadRequest, fmt.Sprintf(format, args...))
}

// planImport reads the file and plans each line against the catalogue.
// A file that is not CSV (or not UTF-8, or without the sku column) is a
// 400; lines with bad values are the plan's Errors.
func planImport(ctx context.Context, s store.Products, data []byte) (*importPlan, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a spreadsheet's byte order mark
	// Line ends as \n: a browser sends the Confirm's copy of the file with
	// \r\n, and the digest must name the same file either way.
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	if !utf8.Valid(data) {
		return nil, importBadRequest("the file must be UTF-8 text")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, importBadRequest("the file is empty: its first line names the columns (%s)", strings.Join(importColumns, ", "))
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = 0
	head, err := r.Read()
	if err != nil {
		return nil, csvError(err)
	}
	col := map[string]int{}
	for i, h := range head {
		h = strings.ToLower(strings.TrimSpace(h))
		known := false
		for _, c := range importColumns {
			known = known || c == h
		}
		if !known {
			return nil, importBadRequest("line 1: unknown column %q; the columns are %s", h, strings.Join(importColumns, ", "))
		}
		if _, dup := col[h]; dup {
			return nil, importBadRequest("line 1: the column %q is named twice", h)
		}
		col[h] = i
	}
	if _, ok := col["sku"]; !ok {
		return nil, importBadRequest("line 1: the column sku is required (the columns are %s)", strings.Join(importColumns, ", "))
	}
	plan := &importPlan{Create: []importLine{}, Change: []importLine{}, Unchanged: []importLine{}, Errors: []importError{}, csv: string(data)}
	var lines []importLine
	seen := map[string]int{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		n, _ := r.FieldPos(0)
		if len(lines)+len(plan.Errors) >= MaxImportLines {
			return nil, store.Errorf(store.EINVALID, "the file has more than %s products: split it", thousands(MaxImportLines))
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // a blank line
		}
		cell := func(name string) *string {
			i, ok := col[name]
			if !ok {
				return nil
			}
			v := rec[i]
			return &v
		}
		l := importLine{Line: n, in: store.ProductInput{SKU: cell("sku"), Name: cell("name"), UnitPrice: cell("unit_price"), Currency: cell("currency")}}
		l.SKU = strings.TrimSpace(*l.in.SKU)
		if a := cell("active"); a != nil {
			switch strings.ToLower(strings.TrimSpace(*a)) {
			case "true", "1", "yes":
				yes := true
				l.in.Active = &yes
			case "false", "0", "no":
				no := false
				l.in.Active = &no
			case "":
			default:
				plan.Errors = append(plan.Errors, importError{n, "active", "must be true or false"})
				continue
			}
		}
		if first, dup := seen[strings.ToLower(l.SKU)]; dup && l.SKU != "" {
			plan.Errors = append(plan.Errors, importError{n, "sku", fmt.Sprintf("is on line %d too", first)})
			continue
		}
		seen[strings.ToLower(l.SKU)] = n
		lines = append(lines, l)
	}
	skus := make([]string, len(lines))
	for i, l := range lines {
		skus[i] = l.SKU
	}
	found, err := s.ProductsBySKU(ctx, skus)
	if err != nil {
		return nil, err
	}
	digest := sha256.New()
	digest.Write(data)
	for _, l := range lines {
		cur := found[l.SKU]
		next, errs := store.ApplyProduct(cur, l.in)
		for _, f := range importColumns {
			if msg, bad := errs[f]; bad {
				plan.Errors = append(plan.Errors, importError{l.Line, f, msg})
			}
		}
		if len(errs) > 0 {
			continue
		}
		p := next
		l.Product = &p
		if cur == nil {
			fmt.Fprintf(digest, "|%d:new", l.Line)
			plan.Create = append(plan.Create, l)
			continue
		}
		fmt.Fprintf(digest, "|%d:%d:%d", l.Line, cur.ID, cur.Version)
		l.ID, l.Version = cur.ID, cur.Version
		l.Product.ID, l.Product.Version = cur.ID, cur.Version
		l.Changes = productChanges(cur, &next)
		if len(l.Changes) == 0 {
			plan.Unchanged = append(plan.Unchanged, l)
		} else {
			plan.Change = append(plan.Change, l)
		}
	}
	sortErrors(plan.Errors)
	plan.Digest = hex.EncodeToString(digest.Sum(nil))
	return plan, nil
}

// csvError is a file encoding/csv cannot read: 400 naming the line.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return importBadRequest("line %d: %v", pe.StartLine, pe.Err)
	}
	return importBadRequest("the file is not CSV: %v", err)
}

// sortErrors orders the errors by line (insertion sort: they come almost
// in order).
func sortErrors(es []importError) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Line < es[j-1].Line; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// productChanges are the fields that differ between a and b, as the
// import's columns name them.
func productChanges(a, b *store.Product) []importChange {
	var out []importChange
	add := func(f, x, y string) {
		if x != y {
			out = append(out, importChange{f, x, y})
		}
	}
	add("sku", a.SKU, b.SKU)
	add("name", a.Name, b.Name)
	add("unit_price", a.UnitPrice.String(), b.UnitPrice.String())
	add("currency", a.Currency, b.Currency)
	add("active", strconv.FormatBool(a.Active), strconv.FormatBool(b.Active))
	return out
}

// applyImport writes a plan without errors: each create and change through
// the store's one write path, a change only over the version planned. A
// line the store refuses (a product changed since the plan, a SKU taken
// meanwhile) is listed in the plan's Errors; the other lines are written.
func applyImport(ctx context.Context, s store.Products, plan *importPlan) error {
	// The lines are independent records: a few writers at once, each
	// line still one write of its own.
	const writers = 3
	type job struct {
		l      *importLine
		create bool
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var failed error
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var p *store.Product
				var err error
				if j.create {
					p, err = s.CreateProduct(ctx, j.l.in)
				} else {
					in, v := j.l.in, j.l.Version
					in.Version = &v
					p, err = s.UpdateProduct(ctx, j.l.ID, in, 0)
				}
				mu.Lock()
				switch {
				case err == nil:
					j.l.ID, j.l.Version, j.l.Product = p.ID, p.Version, p
				case !lineErr(plan, j.l.Line, err) && failed == nil:
					failed = err
				}
				mu.Unlock()
			}
		}()
	}
	for i := range plan.Create {
		jobs <- job{&plan.Create[i], true}
	}
	for i := range plan.Change {
		jobs <- job{&plan.Change[i], false}
	}
	close(jobs)
	wg.Wait()
	if failed != nil {
		return failed
	}
	plan.Applied = true
	sortErrors(plan.Errors)
	return nil
}

// lineErr records a store's refusal of one line; false when err is not
// about the line (the store is down).
func lineErr(plan *importPlan, line int, err error) bool {
	var e *store.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case store.EINVALID, store.ECONFLICT, store.ENOTFOUND, store.EPRECONDITION:
		for f, m := range e.Fields {
			plan.Errors = append(plan.Errors, importError{line, f, m})
		}
		if len(e.Fields) == 0 {
			plan.Errors = append(plan.Errors, importError{Line: line, Message: e.Message})
		}
		return true
	}
	return false
}

// importJSON is the JSON of a plan refused at the page's Confirm: the
// plan and why.
type importJSON struct {
	*importPlan
	Error string `json:"error,omitempty"`
}

// importStatus is the status and message of a plan's answer.
func importStatus(plan *importPlan) (int, string) {
	if len(plan.Errors) == 0 {
		return http.StatusOK, ""
	}
	bad := map[int]bool{}
	for _, e := range plan.Errors {
		bad[e.Line] = true
	}
	if plan.Applied {
		return http.StatusConflict, fmt.Sprintf("%d %s refused by the store (changed since the plan?); the other lines were imported",
			len(bad), plural(int64(len(bad)), "line was", "lines were"))
	}
	return http.StatusUnprocessableEntity, fmt.Sprintf("%d %s bad: nothing was imported", len(bad), plural(int64(len(bad)), "line is", "lines are"))
}

// importAnswer is the JSON answer of a plan (POST /products with text/csv):
// a dry run's plan, bad lines and all, with 200; an import's plan when it
// was written, else the error every 422 (or 409) has, its messages by
// line and column as lines[N][column] (lines[N] for the line as a whole).
func importAnswer(plan *importPlan) *response {
	status, msg := importStatus(plan)
	if plan.DryRun || status == http.StatusOK {
		return &response{JSON: plan, CacheControl: "no-store"}
	}
	fields := map[string]string{}
	for _, e := range plan.Errors {
		k := "lines[" + strconv.Itoa(e.Line) + "]"
		if e.Field != "" {
			k += "[" + e.Field + "]"
		}
		fields[k] = e.Message
	}
	if status == http.StatusConflict {
		// A 409 carries no messages by field: the lines are in its words.
		for _, e := range plan.Errors {
			msg += fmt.Sprintf("; line %d: %s %s", e.Line, e.Field, e.Message)
		}
		return &response{Status: status, Err: store.Errorf(store.ECONFLICT, "%s", msg)}
	}
	return &response{Status: status, Err: &store.Error{Code: store.EINVALID, Message: msg, Fields: fields}}
}

// isCSVBody says the request's body is text/csv.
func isCSVBody(c *fiber.Ctx) bool {
	ct, _, _ := strings.Cut(c.Get(fiber.HeaderContentType), ";")
	return strings.EqualFold(strings.TrimSpace(ct), "text/csv")
}

// importProducts is POST /products with a CSV body: the plan with
// ?dry_run=1, else the plan applied when no line is bad. Creating and
// changing products are both the managers'.
func importProducts(s store.Products, create handler) handler {
	return func(c *fiber.Ctx, rp repr) (*response, error) {
		if !isCSVBody(c) {
			return create(c, rp)
		}
		if err := productResource.allow(c, actUpdate); err != nil {
			return nil, err
		}
		plan, err := planImport(c.UserContext(), s, c.Body())
		if err != nil {
			return nil, err
		}
		if dry := c.Query("dry_run"); dry == "1" || dry == "true" {
			plan.DryRun = true
			return importAnswer(plan), nil
		}
		if len(plan.Errors) == 0 {
			if err := applyImport(importContext(c), s, plan); err != nil {
				return nil, err
			}
		}
		return importAnswer(plan), nil
	}
}

// importContext is the context of an import's writes: the request's
// values without its deadline, which bounds one read, not ten thousand
// writes.
func importContext(c *fiber.Ctx) context.Context {
	return context.WithoutCancel(c.UserContext())
}

// importView is the Products page's import: the upload form and, once a
// file was sent, its plan (or why it could not be read).
type importView struct {
	Plan *importPlan
	// Error is why the file could not be planned (not CSV, too large).
	Error string
	// Stale says the confirm was refused: the products (or the file)
	// changed since the preview, which Plan now shows again.
	Stale bool
}

// MaxLines is the most products a file may have.
func (importView) MaxLines() string { return thousands(MaxImportLines) }

// Columns are the columns a file may have.
func (importView) Columns() []string { return importColumns }

// importResponse is the import page with iv.
func importResponse(status int, iv *importView, n *notice) *response {
	return &response{Status: status, Partial: productResource.Partial("import"), Notice: n, CacheControl: "no-store",
		View: &view{Title: "Import products", Nav: productResource.Plural, Import: iv}}
}

// importPage is GET /products/import: the upload form (JSON: the columns
// and the line limit).
func importPage(c *fiber.Ctx, rp repr) (*response, error) {
	out := importResponse(http.StatusOK, &importView{}, nil)
	out.JSON = fiber.Map{"columns": importColumns, "max_lines": MaxImportLines,
		"post": productResource.Path(), "content_type": "text/csv"}
	return out, nil
}

// importForm is POST /products/import, the page's form: a file (the
// upload, multipart) is previewed; the preview's Confirm (the file as
// the field csv, the plan's digest and confirm=1) is planned again and
// written only when its digest is the one previewed and no line is bad.
func importForm(s store.Products) handler {
	return func(c *fiber.Ctx, rp repr) (*response, error) {
		var data []byte
		if fh, err := c.FormFile("file"); err == nil {
			f, err := fh.Open()
			if err != nil {
				return nil, importBadRequest("the file could not be read: %v", err)
			}
			data, err = io.ReadAll(io.LimitReader(f, MaxBody+1))
			f.Close()
			if err != nil {
				return nil, importBadRequest("the file could not be read: %v", err)
			}
		} else {
			data = []byte(c.FormValue("csv"))
		}
		if len(bytes.TrimSpace(data)) == 0 {
			msg := "choose a CSV file to import"
			if rp == reprJSON {
				return nil, importBadRequest("%s", msg)
			}
			return importResponse(http.StatusUnprocessableEntity, &importView{Error: msg}, errorNotice("Choose a CSV file to import.")), nil
		}
		plan, err := planImport(c.UserContext(), s, data)
		if err != nil {
			var fe *fiber.Error
			var se *store.Error
			switch {
			case rp == reprJSON:
			case errors.As(err, &fe):
				return importResponse(fe.Code, &importView{Error: fe.Message}, errorNotice("The file was not imported: "+fe.Message+".")), nil
			case errors.As(err, &se) && se.Code == store.EINVALID:
				return importResponse(http.StatusUnprocessableEntity, &importView{Error: se.Message}, errorNotice("The file was not imported: "+se.Message+".")), nil
			}
			return nil, err
		}
		confirm := c.FormValue("confirm") == "1"
		if !confirm {
			plan.DryRun = true
			if rp == reprJSON {
				return importAnswer(plan), nil
			}
			status, _ := importStatus(plan)
			return importResponse(status, &importView{Plan: plan}, nil), nil
		}
		if plan.Digest != c.FormValue("digest") {
			plan.DryRun = true
			out := importResponse(http.StatusConflict, &importView{Plan: plan, Stale: true},
				warningNotice("The products changed since the preview: nothing was imported. Check this preview and confirm again."))
			out.JSON = importJSON{importPlan: plan, Error: "the products changed since the preview: nothing was imported"}
			return out, nil
		}
		if len(plan.Errors) == 0 {
			if err := applyImport(importContext(c), s, plan); err != nil {
				return nil, err
			}
		}
		status, msg := importStatus(plan)
		if rp == reprJSON || status != http.StatusOK {
			if rp == reprJSON {
				return importAnswer(plan), nil
			}
			return importResponse(status, &importView{Plan: plan}, errorNotice(strings.ToUpper(msg[:1])+msg[1:]+".")), nil
		}
		return &response{Redirect: productResource.Path(), Notice: successNotice(fmt.Sprintf("Imported %s: %d created, %d changed, %d unchanged.",
			plural(int64(plan.Lines()), "1 product", thousands(int64(plan.Lines()))+" products"), len(plan.Create), len(plan.Change), len(plan.Unchanged)))}, nil
	}
}

// describeImport adds the import to the OpenAPI description: a CSV body
// on POST /products, its plan (200), and the page's /products/import.
func describeImport(d *apiDoc, paths obj) {
	plan := d.schemaOf(reflect.TypeFor[importPlan]())
	post := paths[productResource.Path()].(obj)["post"].(obj)
	post["requestBody"].(obj)["content"].(obj)["text/csv"] = obj{"schema": obj{"type": "string",
		"description": "a header row naming the columns (sku, name, unit_price, currency, active; sku required), then a product a line"}}
	params, _ := post["parameters"].([]any)
	post["parameters"] = append(params, query("dry_run", "with a CSV body: 1 answers the plan and writes nothing", obj{"type": "string", "enum": []any{"", "0", "1", "true", "false"}}))
	resps := post["responses"].(obj)
	resps["200"] = answer("a CSV body: the plan (with dry_run) or what was written", plan)
	resps["409"] = answer("a CSV body: lines the store refused while writing (a product changed since the plan)", errorSchema(nil))
	form := answer("the import page", obj{})
	paths[productResource.ViewPath("import")] = obj{
		"get": op("importProductsForm", "the import's upload form (JSON: its columns and line limit)", nil, nil,
			responses(map[int]obj{200: answer("the upload form", obj{"type": "object"})}, false)),
		"post": op("importProductsPage", "the page's upload (file, multipart) and Confirm (csv, digest, confirm=1)", nil, obj{"type": "object"},
			responses(map[int]obj{200: answer("the plan", plan), 303: answer("confirmed and written: to the List", nil), 409: form, 422: form}, true)),
	}
}
