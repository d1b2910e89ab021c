package routes

// The List and Inquiry query (CONTRACT §4) and the view of one page of it:
// the links that keep the whole query, the sortable column headers, the
// page numbers and the words the page says about them.

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// dateLayout is how from and to are written: a calendar date, UTC.
const dateLayout = "2006-01-02"

// listView is the List or Inquiry page.
type listView struct {
	// R is the resource listed: its results' id, its paths.
	R       *resource
	Path    string // /orders or /orders/inquiry
	Inquiry bool
	Q       string
	Status  string
	// Sort is the sort asked for (the default when none was); SortAsked
	// says the query named one.
	Sort      store.Sort
	SortAsked bool
	// DateFrom and DateTo are the created-date range as YYYY-MM-DD ("" when open).
	DateFrom, DateTo string
	// EmptyRange says to is before from: nothing can match.
	EmptyRange bool
	PerPage    int
	Page       store.Page
	Prev       string
	Next       string
	// First and Last number the orders shown (1-based; 0 when none).
	First, Last int64
	// Pages is the number of pages (at least, when the total is a lower bound).
	Pages int64
	// ResultsOnly says the results part is rendered alone (an htmx swap of
	// #order-results): it then carries the search form's kept values too.
	ResultsOnly bool
}

// parseQuery reads the List query; every malformed value is a 400 that
// says what is allowed.
func parseQuery(c *fiber.Ctx) (store.Query, error) {
	q := store.Query{Q: c.Query("q"), Status: store.Status(strings.ToLower(strings.TrimSpace(c.Query("status"))))}
	if q.Status != "" && !q.Status.Valid() {
		return q, badRequest("status must be one of %s", store.StatusNames())
	}
	q.Sort = store.Sort(strings.ToLower(strings.TrimSpace(c.Query("sort"))))
	if q.Sort != "" && !q.Sort.Valid() {
		names := make([]string, len(store.Sorts))
		for i, s := range store.Sorts {
			names[i] = string(s)
		}
		return q, badRequest("sort must be one of %s", strings.Join(names, ", "))
	}
	date := func(name string) (time.Time, error) {
		s := strings.TrimSpace(c.Query(name))
		if s == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(dateLayout, s)
		if err != nil {
			return t, badRequest("%s must be a date written YYYY-MM-DD, like 2025-01-31", name)
		}
		return t.UTC(), nil
	}
	var err error
	if q.From, err = date("from"); err != nil {
		return q, err
	}
	if q.To, err = date("to"); err != nil {
		return q, err
	}
	num := func(name string) (int, error) {
		s := strings.TrimSpace(c.Query(name))
		if s == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			if e, ok := err.(*strconv.NumError); ok && e.Err == strconv.ErrRange {
				if strings.HasPrefix(s, "-") {
					return -1, nil
				}
				return 1 << 30, nil
			}
			return 0, badRequest("%s must be a whole number", name)
		}
		return n, nil
	}
	if q.Page, err = num("page"); err != nil {
		return q, err
	}
	if q.PerPage, err = num("per_page"); err != nil {
		return q, err
	}
	if q.PerPage == 0 && c.Query("per_page") != "" {
		q.PerPage = 1 // "0" clamps to the lowest page size
	}
	q.Normalize()
	return q, nil
}

// emptyRange reports whether q's dates leave nothing: to before from. Such
// a query is answered with an empty page (not a 400): the search form's
// two date fields can say it while a person is still choosing.
func emptyRange(q store.Query) bool {
	return !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From)
}

// newListView builds the view of one page of query q.
func newListView(res *resource, path string, inquiry bool, q store.Query, sortAsked bool, page store.Page) *listView {
	l := &listView{R: res, Path: path, Inquiry: inquiry, Q: q.Q, Status: string(q.Status), Sort: q.Sort,
		SortAsked: sortAsked, PerPage: q.PerPage, Page: page, EmptyRange: emptyRange(q)}
	if !q.From.IsZero() {
		l.DateFrom = q.From.Format(dateLayout)
	}
	if !q.To.IsZero() {
		l.DateTo = q.To.Format(dateLayout)
	}
	// Pages counted without multiplying (a huge page number must not
	// overflow into a next link); past the end, prev leads to the last page.
	l.Pages = max((page.Total+int64(page.PerPage)-1)/int64(page.PerPage), 1)
	if page.Page > 1 {
		l.Prev = l.PageURL(int(min(int64(page.Page-1), l.Pages)))
	}
	if int64(page.Page) < l.Pages {
		l.Next = l.PageURL(page.Page + 1)
	}
	if len(page.Orders) > 0 {
		l.First = int64(page.Page-1)*int64(page.PerPage) + 1
		l.Last = l.First + int64(len(page.Orders)) - 1
		if l.Last > page.Total && !page.TotalIsLowerBound {
			// An order created since the count: never "26–26 of 25".
			l.Last = page.Total
		}
	}
	if page.TotalIsLowerBound && l.Last >= page.Total && len(page.Orders) == page.PerPage {
		// The search stopped early: there may be more after this page.
		l.Next = l.PageURL(page.Page + 1)
		l.Pages = max(l.Pages, int64(page.Page)+1)
	}
	return l
}

// url writes the List or Inquiry URL of the query with page p, sort s and
// page size n; defaults are left out, so the plain list is just the path.
func (l *listView) url(p int, s store.Sort, n int) string {
	v := url.Values{}
	if l.Q != "" {
		v.Set("q", l.Q)
	}
	if l.Status != "" {
		v.Set("status", l.Status)
	}
	if s != "" && s != store.SortCreatedDesc {
		v.Set("sort", string(s))
	}
	if l.DateFrom != "" {
		v.Set("from", l.DateFrom)
	}
	if l.DateTo != "" {
		v.Set("to", l.DateTo)
	}
	if n != store.DefaultPerPage {
		v.Set("per_page", strconv.Itoa(n))
	}
	if p > 1 {
		v.Set("page", strconv.Itoa(p))
	}
	if len(v) == 0 {
		return l.Path
	}
	return l.Path + "?" + v.Encode()
}

// PageURL returns the URL of page p with the same query.
func (l *listView) PageURL(p int) string { return l.url(p, l.Sort, l.PerPage) }

// URL is the URL of the page shown.
func (l *listView) URL() string { return l.PageURL(l.Page.Page) }

// LastURL is the URL of the last page (a page past the end links to it).
func (l *listView) LastURL() string { return l.PageURL(int(min(l.Pages, 1<<30))) }

// KeepSort says the search form carries the sort: a List sorted by one of
// its column headers (the Inquiry's sort is a field of the form).
func (l *listView) KeepSort() bool { return !l.Inquiry && l.Sort != store.SortCreatedDesc }

// KeepPerPage says the search form carries a page size that is not the
// default.
func (l *listView) KeepPerPage() bool { return l.PerPage != store.DefaultPerPage }

// QueryMax is the longest search the store reads: the search box's maxlength.
func (l *listView) QueryMax() int { return store.MaxQuery }

// Empty is what the results say when no order matches (a page past the
// end says so in Count instead); the List offers to create one.
func (l *listView) Empty() emptyView {
	text := "No orders"
	if l.Q != "" {
		text += " match “" + l.Q + "”"
	}
	if l.Status != "" {
		text += " with status " + l.Status
	}
	if l.DateFrom != "" || l.DateTo != "" {
		text += " created in those dates"
	}
	v := emptyView{Text: text}
	if !l.Inquiry {
		v.NewURL, v.NewText = l.R.NewPath(), "Create one"
	}
	return v
}

// emptyView is the data of partials/empty: a sentence (without its full
// stop) and, when NewURL is set, a link to create the first one.
type emptyView struct {
	Text, NewURL, NewText string
}

// PastEnd says the page asked for lies past the last one.
func (l *listView) PastEnd() bool {
	return len(l.Page.Orders) == 0 && l.Page.Total > 0 && int64(l.Page.Page) > l.Pages
}

// The List's sortable columns and the way each sorts first: names A to Z,
// dates and totals newest or largest first.
var sortColumns = map[string]store.Sort{
	"created":  store.SortCreatedDesc,
	"customer": store.SortCustomer,
	"updated":  store.SortUpdatedDesc,
	"total":    store.SortTotalDesc,
}

// sortedBy reports whether the rows are in the order of field (a search
// comes in match order whatever the sort).
func (l *listView) sortedBy(field string) bool {
	return !l.MatchOrder() && l.Sort.Field() == field
}

// SortURL is the target of a column header: page 1 sorted by field, the
// other way round when it is already sorted by field.
func (l *listView) SortURL(field string) string {
	s := sortColumns[field]
	if l.sortedBy(field) {
		s = reverse(l.Sort)
	}
	return l.url(1, s, l.PerPage)
}

func reverse(s store.Sort) store.Sort {
	if s.Desc() {
		return store.Sort(s.Field())
	}
	return "-" + s
}

// AriaSort is the aria-sort value of field's header: "ascending",
// "descending", or "" when the rows are not sorted by it.
func (l *listView) AriaSort(field string) string {
	if !l.sortedBy(field) {
		return ""
	}
	if l.Sort.Desc() {
		return "descending"
	}
	return "ascending"
}

// SortHint says what activating field's header does, for screen readers
// and as the link's tooltip.
func (l *listView) SortHint(field string) string {
	s := sortColumns[field]
	if l.sortedBy(field) {
		s = reverse(l.Sort)
	}
	return "sort " + sortWords(s)
}

// sortWords says a sort in words: "newest first", "Z to A".
func sortWords(s store.Sort) string {
	asc, desc := "oldest first", "newest first"
	switch s.Field() {
	case "customer":
		asc, desc = "by customer, A to Z", "by customer, Z to A"
	case "updated":
		asc, desc = "least recently updated first", "most recently updated first"
	case "total":
		asc, desc = "smallest total first", "largest total first"
	}
	if s.Desc() {
		return desc
	}
	return asc
}

// SortText says how the rows are ordered, for the summary line.
func (l *listView) SortText() string {
	if l.MatchOrder() {
		return "best matches first"
	}
	return sortWords(l.Sort)
}

// MatchOrder says the rows are a search's, in match order.
func (l *listView) MatchOrder() bool { return l.Q != "" || l.Page.MatchOrder }

// MatchOrderNote says, when a search was asked for in some sort, that the
// sort does not apply to it.
func (l *listView) MatchOrderNote() bool {
	return l.MatchOrder() && l.SortAsked && l.Sort != store.SortCreatedDesc
}

// SortOptions are the Inquiry's sort choices (it has no column headers).
func (l *listView) SortOptions() []sortOption {
	out := make([]sortOption, len(store.Sorts))
	for i, s := range store.Sorts {
		w := sortWords(s)
		out[i] = sortOption{Value: string(s), Label: strings.ToUpper(w[:1]) + w[1:], Selected: s == l.Sort}
	}
	return out
}

type sortOption struct {
	Value, Label string
	Selected     bool
}

// pageSizes are the page-size choices: the default, and up to the most.
var pageSizes = []int{store.DefaultPerPage, 50, store.MaxPerPage}

// PageSizes are the page-size choices under the table.
func (l *listView) PageSizes() []pageLink {
	var out []pageLink
	for _, n := range pageSizes {
		// The first order shown stays on the page of the new size.
		p := 1
		if l.First > 0 {
			p = int((l.First-1)/int64(n)) + 1
		}
		out = append(out, pageLink{N: int64(n), URL: l.url(p, l.Sort, n), Current: n == l.PerPage})
	}
	return out
}

// pageLink is one page number (or page size) under the table; Gap is an
// ellipsis between numbers.
type pageLink struct {
	N       int64
	URL     string
	Current bool
	Gap     bool
}

// PageLinks are the page numbers: the first, the last, and two either side
// of the current one, with gaps between ("1 … 4 5 6 7 8 … 40"). When the
// total is a lower bound the last page is unknown and not shown.
func (l *listView) PageLinks() []pageLink {
	last := l.Pages
	cur := int64(l.Page.Page)
	if last <= 1 && cur <= 1 {
		return nil
	}
	var nums []int64
	add := func(n int64) {
		if n >= 1 && n <= last && (len(nums) == 0 || nums[len(nums)-1] < n) {
			nums = append(nums, n)
		}
	}
	add(1)
	for n := cur - 2; n <= cur+2; n++ {
		add(n)
	}
	if !l.Page.TotalIsLowerBound {
		add(last)
	}
	var out []pageLink
	for i, n := range nums {
		if i > 0 && n > nums[i-1]+1 {
			out = append(out, pageLink{Gap: true})
		}
		out = append(out, pageLink{N: n, URL: l.PageURL(int(n)), Current: n == cur})
	}
	if l.Page.TotalIsLowerBound && len(nums) > 0 && nums[len(nums)-1] < cur+2 {
		out = append(out, pageLink{Gap: true})
	}
	return out
}

// TotalText is the number of matching orders: "1,234", or "at least
// 10,000" when a search stopped early.
func (l *listView) TotalText() string {
	n := thousands(l.Page.Total)
	if l.Page.TotalIsLowerBound {
		return "at least " + n
	}
	return n
}

// Count is the summary line above the results.
func (l *listView) Count() string {
	switch {
	case l.EmptyRange:
		return "No orders: the “to” date " + l.DateTo + " is before the “from” date " + l.DateFrom
	case l.PastEnd():
		return "No orders on page " + thousands(int64(l.Page.Page)) + " — " + l.TotalText() + " " +
			plural(l.Page.Total, "order", "orders") + " on " + thousands(l.Pages) + " " + plural(l.Pages, "page", "pages")
	case l.Page.Total == 0 || len(l.Page.Orders) == 0:
		return "No orders"
	}
	return "Showing " + thousands(l.First) + "–" + thousands(l.Last) + " of " + l.TotalText()
}

// Title is the page's title: what it lists ("Search “ad”, page 2").
func (l *listView) Title() string {
	var parts []string
	if l.Q != "" {
		parts = append(parts, "search “"+l.Q+"”")
	}
	if l.Status != "" {
		parts = append(parts, l.Status)
	}
	switch {
	case l.DateFrom != "" && l.DateTo != "":
		parts = append(parts, "created "+l.DateFrom+" to "+l.DateTo)
	case l.DateFrom != "":
		parts = append(parts, "created from "+l.DateFrom)
	case l.DateTo != "":
		parts = append(parts, "created up to "+l.DateTo)
	}
	if l.Page.Page > 1 {
		parts = append(parts, "page "+thousands(int64(l.Page.Page)))
	}
	text := strings.Join(parts, ", ")
	if l.Inquiry {
		if text == "" {
			return "Inquiry"
		}
		return "Inquiry: " + text
	}
	if text == "" {
		return "" // the site name alone: "Orders"
	}
	return strings.ToUpper(text[:1]) + text[1:]
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// thousands writes n with comma separators: 10000 → "10,000".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// sortColumn is one sortable column header of the List.
type sortColumn struct {
	// R is the resource listed: the header's link swaps its results.
	R                                        *resource
	Field, Label, Class, URL, AriaSort, Hint string
}

// Column describes the header of the column that sorts by field.
func (l *listView) Column(field, label, class string) sortColumn {
	return sortColumn{R: l.R, Field: field, Label: label, Class: class, URL: l.SortURL(field), AriaSort: l.AriaSort(field), Hint: l.SortHint(field)}
}
