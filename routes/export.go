package routes

// CSV export of a collection: the List (or another view of it, such as the
// Inquiry) with the same query, as a spreadsheet reads it. The rows are the
// ones the JSON List answers for that query, page after page: the export
// runs the resource's own list handler for each page, so every filter,
// sort and search is honoured by the code that serves the List itself, and
// the columns are the JSON entries' members, in the same words and values.
// It is streamed: one page of rows is held at a time, whatever the count.

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"orders/store"
)

// csvExport is a view of a collection served as CSV: the List ("") or a
// named view (the Inquiry).
type csvExport struct {
	// Expand names the JSON member, a list of objects, written one CSV row
	// per element (an order's items in the Inquiry): the record's columns
	// repeat on each, the element's columns follow as "items.sku". A
	// record with no elements still has its row, the element's cells empty.
	Expand string
	// Also says more of the rows in the List's link, after the count and
	// the resource's name: " with their items".
	Also string
}

// csvPageTimeout bounds the store's work for one page of an export: the
// export as a whole outlives the request's own deadline.
const csvPageTimeout = 10 * time.Second

// csvWriteTimeout is how long the client has to take each page's rows.
const csvWriteTimeout = 30 * time.Second

// exportLocal marks the requests an export makes of a list handler: the
// orders' List then reads pages of store.ExportPerPage.
const exportLocal = "export"

// exporting says c is one of an export's requests of a list handler.
func exporting(c *fiber.Ctx) bool { return c.Locals(exportLocal) == true }

// exportPath is the URI of a view's CSV: /orders.csv, /orders/inquiry.csv.
func (r *resource) exportPath(view string) string {
	if view == "" {
		return r.Path() + ".csv"
	}
	return r.ViewPath(view) + ".csv"
}

// wantsCSV says the Accept header prefers text/csv, named as such, to
// both HTML and JSON: "text/csv" alone, or "text/csv, */*;q=0.1". A
// wildcard alone never chooses CSV.
func wantsCSV(accept string) bool {
	var csvQ, other float64 = -1, 0
	for _, r := range strings.Split(accept, ",") {
		typ, params, _ := strings.Cut(r, ";")
		typ = strings.ToLower(strings.TrimSpace(typ))
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
		}
		switch typ {
		case "text/csv":
			csvQ = q
		case "text/html", "application/json":
			other = max(other, q)
		}
	}
	return csvQ > 0 && csvQ > other
}

// csvColumn is one column of an export: its header (the JSON member's
// name, "address.city" inside an object) and how to reach its value.
type csvColumn struct {
	name  string
	index []int
	// omitEmpty: the JSON leaves the member out when it is zero, and the
	// cell is then empty too.
	omitEmpty bool
	// item: the value is in the expanded element, not the record.
	item bool
}

// stringerType: a value that says itself (money) is one cell.
var stringerType = reflect.TypeFor[fmt.Stringer]()

// csvColumns lists the columns of entries of type t: each JSON member that
// is a single value (text, number, true/false, money, time), objects'
// members under their dotted name, and, when expand names a list member,
// its elements' members after the record's. Other lists and objects that
// may be absent (a customer's orders) are not columns.
func csvColumns(t reflect.Type, expand string) []csvColumn {
	var cols, items []csvColumn
	var walk func(t reflect.Type, prefix string, index []int, item bool, out *[]csvColumn)
	walk = func(t reflect.Type, prefix string, index []int, item bool, out *[]csvColumn) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			idx := append(append([]int(nil), index...), i)
			ft := f.Type
			switch {
			case ft == timeType, ft.Kind() == reflect.Pointer && ft.Elem() == timeType, ft.Implements(stringerType):
			case ft.Kind() == reflect.Struct:
				walk(ft, prefix+name+".", idx, item, out)
				continue
			case ft.Kind() == reflect.Slice && prefix == "" && !item && name == expand && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), name+".", []int{i}, true, &items)
				continue
			case ft.Kind() == reflect.Slice, ft.Kind() == reflect.Map, ft.Kind() == reflect.Pointer, ft.Kind() == reflect.Interface:
				continue
			}
			*out = append(*out, csvColumn{name: prefix + name, index: idx, item: item,
				omitEmpty: strings.Contains(","+opts+",", ",omitempty,")})
		}
	}
	walk(t, "", nil, false, &cols)
	return append(cols, items...)
}

// expandIndex is the field index of the expanded list in t, or -1.
func expandIndex(t reflect.Type, expand string) int {
	if expand == "" {
		return -1
	}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == expand && t.Field(i).Type.Kind() == reflect.Slice {
			return i
		}
	}
	return -1
}

// csvCell writes one value as a cell: money as its decimal string, times
// in ISO 8601 (RFC 3339, as JSON writes them), numbers and true/false as
// JSON writes them, text as it is. A cell that a spreadsheet would take
// for a formula (starting with =, +, -, @, a tab or a carriage return)
// gets a leading apostrophe.
func csvCell(v reflect.Value, omitEmpty bool) string {
	if omitEmpty && v.IsZero() {
		return ""
	}
	var s string
	switch {
	case v.Type() == timeType:
		s = v.Interface().(time.Time).Format(time.RFC3339Nano)
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		return csvCell(v.Elem(), false)
	case v.Type().Implements(stringerType):
		s = v.Interface().(fmt.Stringer).String()
	case v.Kind() == reflect.String:
		s = v.String()
	case v.Kind() == reflect.Bool:
		s = strconv.FormatBool(v.Bool())
	case v.CanInt():
		s = strconv.FormatInt(v.Int(), 10)
	case v.CanUint():
		s = strconv.FormatUint(v.Uint(), 10)
	default:
		s = fmt.Sprint(v.Interface())
	}
	return safeCell(s)
}

// safeCell prefixes a cell a spreadsheet would run as a formula with an
// apostrophe, which shows the text as it is.
func safeCell(s string) string {
	if s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
}

// csvRows writes the entries (a slice) as rows of cols.
func csvRows(w *csv.Writer, entries reflect.Value, cols []csvColumn, expand int, rec []string) error {
	for i := range entries.Len() {
		e := entries.Index(i)
		var elems reflect.Value
		n := 1
		if expand >= 0 {
			elems = e.Field(expand)
			n = max(elems.Len(), 1)
		}
		for j := range n {
			rec = rec[:0]
			for _, c := range cols {
				switch {
				case !c.item:
					rec = append(rec, csvCell(e.FieldByIndex(c.index), c.omitEmpty))
				case j < elems.Len():
					rec = append(rec, csvCell(elems.Index(j).FieldByIndex(c.index[1:]), c.omitEmpty))
				default:
					rec = append(rec, "")
				}
			}
			if err := w.Write(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// exportPage is one page of a view's entries as its list handler answered
// them, and whether another page follows.
type exportPage struct {
	entries reflect.Value
	more    bool
}

// serveCSV answers GET of a view's CSV (and the view's URI asked for
// text/csv): whoever may read the view may export it. The query is the
// view's own (page and per_page aside: every page is written); a query
// the view refuses is refused here, with nothing streamed yet, as are a
// store that does not answer and a person without the right.
func serveCSV(res *resource, view string, ex csvExport, list handler, logger *slog.Logger) fiber.Handler {
	path := res.Path()
	if view != "" {
		path = res.ViewPath(view)
	}
	return func(c *fiber.Ctx) error {
		// The same request headers as the List's representations: the
		// answer to one URI depends on them all.
		c.Vary("Accept", "HX-Request", "HX-Request-Type", "HX-History-Restore-Request", "HX-Target", "Cookie")
		if err := res.allow(c, actRead); err != nil {
			return err
		}
		p := personOf(c)
		base := withPerson(context.WithoutCancel(c.UserContext()), p)
		// The query outlives the handler (the rows are written after it
		// returns): a copy of its own, never a pooled one.
		args := &fasthttp.Args{}
		c.Request().URI().QueryArgs().CopyTo(args)
		args.Del("page")
		args.Set("per_page", strconv.Itoa(store.MaxPerPage))
		app := c.App()
		fetch := func(page int) (exportPage, error) {
			args.Set("page", strconv.Itoa(page))
			fctx := &fasthttp.RequestCtx{}
			fctx.Request.SetRequestURI(path + "?" + args.String())
			fctx.Request.Header.Set(fiber.HeaderAccept, fiber.MIMEApplicationJSON)
			lc := app.AcquireCtx(fctx)
			defer app.ReleaseCtx(lc)
			ctx, cancel := context.WithTimeout(base, csvPageTimeout)
			defer cancel()
			lc.SetUserContext(ctx)
			lc.Locals(personLocal, p)
			lc.Locals(exportLocal, true)
			out, err := list(lc, reprJSON)
			if err != nil {
				return exportPage{}, err
			}
			lj, ok := out.JSON.(listJSON)
			if !ok {
				return exportPage{}, fmt.Errorf("export of %s: the list answered %T", path, out.JSON)
			}
			return exportPage{entries: reflect.ValueOf(lj.entries), more: lj.page.Next != nil}, nil
		}
		first, err := fetch(1)
		if err != nil {
			return err
		}
		t := first.entries.Type().Elem()
		cols := csvColumns(t, ex.Expand)
		expand := expandIndex(t, ex.Expand)
		name := strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", "-") + "-" + time.Now().UTC().Format(dateLayout) + ".csv"
		c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+`"`)
		c.Set(fiber.HeaderCacheControl, "no-store")
		conn := c.Context().Conn()
		reqID := requestIDOf(c)
		stopped := func(err error) {
			// The status has been sent: the body ends where the error came
			// (the rows before it are whole), and the log says why.
			logger.Error("csv export stopped", "path", path, "request_id", reqID, "err", err)
		}
		c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
			w := csv.NewWriter(bw)
			w.UseCRLF = true // RFC 4180's line ends
			rec := make([]string, 0, len(cols))
			header := make([]string, len(cols))
			for i, col := range cols {
				header[i] = col.name
			}
			_ = w.Write(header)
			page := first
			for n := 1; ; n++ {
				if conn != nil {
					_ = conn.SetWriteDeadline(time.Now().Add(csvWriteTimeout))
				}
				if err := csvRows(w, page.entries, cols, expand, rec); err != nil {
					stopped(err)
					return
				}
				w.Flush()
				if w.Error() != nil || bw.Flush() != nil || !page.more || page.entries.Len() == 0 {
					return
				}
				if page, err = fetch(n + 1); err != nil {
					stopped(err)
					return
				}
			}
		})
		return nil
	}
}

// exportView is the view's name for its export ("" the List, "inquiry").
func (l *listView) exportView() string {
	return strings.TrimPrefix(strings.TrimPrefix(l.Path, l.R.Path()), "/")
}

// ExportURL is the CSV export of the rows the List shows, on every page:
// the same query without page and per_page ("" when the view has none).
func (l *listView) ExportURL() string {
	view := l.exportView()
	if _, ok := l.R.Exports[view]; !ok || l.Page.Total == 0 {
		return ""
	}
	u := l.url(1, l.Sort, store.DefaultPerPage)
	_, query, _ := strings.Cut(u, "?")
	if query == "" {
		return l.R.exportPath(view)
	}
	return l.R.exportPath(view) + "?" + query
}

// ExportLabel is the export link's words: "Export 1,204 orders (CSV)".
func (l *listView) ExportLabel() string {
	return "Export " + l.TotalText() + " " + plural(l.Page.Total, l.R.Name, l.R.Plural) + l.R.Exports[l.exportView()].Also + " (CSV)"
}
