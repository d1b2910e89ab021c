package routes

// The List and Inquiry query (q, the resource's filters, sort, page and
// per_page) and the view of one page of it: the links that keep the whole
// query, the sortable column headers, the page numbers and the words the
// page says about them.

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"orders/store"
)

// dateLayout is how from and to are written: a calendar date, in the
// person's zone (zoneOf).
const dateLayout = "2006-01-02"

// listing is what a resource's List knows besides its rows: its sorts,
// the filters its query keeps, and how its pages describe them. A
// resource's list handler reads its query (parsePaging and its own
// filters) and gives newListView the page it got from the store.
type listing struct {
	// Title is the List's title ("Products"); "" for the orders' List,
	// whose plain page is titled by the site's name alone.
	Title string
	// Sorts are the sorts the List knows; the first is the default.
	Sorts []store.Sort
	// Columns are the sortable columns, each with the sort a click on its
	// header gives first.
	Columns map[string]store.Sort
	// Words says a sort in words: "newest first", "by SKU, A to Z".
	Words func(store.Sort) string
	// SearchHint is the search box's placeholder: what q matches.
	SearchHint string
	// Params are the filters' query keys, in the order URLs write them.
	Params []string
	// Describe says the filters in words (params has only those given):
	// the page title's parts ("shipped", "created from 2025-01-01") and
	// what an empty list's heading adds after "No orders" (" with status
	// shipped").
	Describe func(params map[string]string) (title []string, empty string)
}

// listResult is one page of a resource's list as the store answered it.
type listResult struct {
	// Rows are the page's members ([]store.Order, []store.Product) and N
	// their number.
	Rows              any
	N                 int
	Page, PerPage     int
	Total             int64
	TotalIsLowerBound bool
	// MatchOrder: a search's rows, in match order.
	MatchOrder bool
	// Sorted: a search's rows, in the sort asked for; SortTooBroad: a sort
	// was asked for, but too many rows match to sort them.
	Sorted, SortTooBroad bool
}

// listView is the List (or another view of the collection: the Inquiry)
// page of any resource.
type listView struct {
	// R is the resource listed: its results' id, its paths, its names.
	R       *resource
	listing *listing
	Path    string // /orders or /orders/inquiry
	Inquiry bool
	Q       string
	// params are the filters given (the keys of listing.Params).
	params map[string]string
	// Sort is the sort asked for (the default when none was); SortAsked
	// says the query named one.
	Sort      store.Sort
	SortAsked bool
	// EmptyRange says the filters leave nothing (to before from).
	EmptyRange bool
	PerPage    int
	Page       listResult
	Prev       string
	Next       string
	// First and Last number the members shown (1-based; 0 when none).
	First, Last int64
	// Pages is the number of pages (at least, when the total is a lower bound).
	Pages int64
	// ResultsOnly says the results part is rendered alone (an htmx swap of
	// the results): it then carries the search form's kept values too.
	ResultsOnly bool
	// Saved are the person's saved views of the List (views.go).
	Saved *savedViews
}

// Param is the value of filter name in the query ("" when not given).
func (l *listView) Param(name string) string { return l.params[name] }

// Rows are the members shown.
func (l *listView) Rows() any { return l.Page.Rows }

// Shown says the page shows at least one member.
func (l *listView) Shown() bool { return l.Page.N > 0 }

// orderListing is the List of orders: its sorts, its status filter and its
// date range.
var orderListing = &listing{
	Sorts:      store.Sorts,
	Columns:    map[string]store.Sort{"created": store.SortCreatedDesc, "customer": store.SortCustomer, "updated": store.SortUpdatedDesc, "total": store.SortTotalDesc},
	Words:      orderSortWords,
	SearchHint: "Name, email, SKU or order number",
	Params:     []string{"status", "from", "to"},
	Describe: func(p map[string]string) (title []string, empty string) {
		if s := p["status"]; s != "" {
			title = append(title, s)
			empty += " with status " + s
		}
		from, to := p["from"], p["to"]
		switch {
		case from != "" && to != "":
			title = append(title, "created "+from+" to "+to)
		case from != "":
			title = append(title, "created from "+from)
		case to != "":
			title = append(title, "created up to "+to)
		}
		if from != "" || to != "" {
			empty += " created in those dates"
		}
		return title, empty
	},
}

// parseQuery reads the orders' List query; every malformed value is a 400
// that says what is allowed.
func parseQuery(c *fiber.Ctx) (store.OrderQuery, error) {
	q := store.OrderQuery{Status: store.Status(strings.ToLower(strings.TrimSpace(c.Query("status"))))}
	if q.Status != "" && !q.Status.Valid() {
		return q, badRequest("status must be one of %s", store.StatusNames())
	}
	q.Sort = store.Sort(strings.ToLower(strings.TrimSpace(c.Query("sort"))))
	if q.Sort != "" && !q.Sort.Valid() {
		return q, badRequest("sort must be one of %s", sortNames(store.Sorts))
	}
	q.SortAsked = q.Sort != ""
	date := func(name string) (time.Time, error) {
		s := strings.TrimSpace(c.Query(name))
		if s == "" {
			return time.Time{}, nil
		}
		// The day starts at the person's midnight: the store reads the
		// date in the location it carries.
		t, err := time.ParseInLocation(dateLayout, s, zoneOf(c))
		if err != nil {
			return t, badRequest("%s must be a date written YYYY-MM-DD, like 2025-01-31", name)
		}
		return t, nil
	}
	var err error
	if q.From, err = date("from"); err != nil {
		return q, err
	}
	if q.To, err = date("to"); err != nil {
		return q, err
	}
	p, err := parsePaging(c)
	if err != nil {
		return q, err
	}
	q.Q, q.Page, q.PerPage = p.Q, p.Page, p.PerPage
	if exporting(c) {
		q.Export, q.PerPage = true, store.ExportPerPage
	}
	q.Normalize()
	return q, nil
}

// parsePaging reads what every List's query has: q, page and per_page,
// clamped and tidied as store.OrderQuery.Normalize does.
func parsePaging(c *fiber.Ctx) (store.OrderQuery, error) {
	q := store.OrderQuery{Q: c.Query("q")}
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
	var err error
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

// validSort reports whether s is one of sorts.
func validSort(sorts []store.Sort, s store.Sort) bool {
	for _, v := range sorts {
		if v == s {
			return true
		}
	}
	return false
}

// sortNames lists sorts for a message: "sku, -sku, name".
func sortNames(sorts []store.Sort) string {
	names := make([]string, len(sorts))
	for i, s := range sorts {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// emptyRange reports whether q's dates leave nothing: to before from. Such
// a query is answered with an empty page (not a 400): the search form's
// two date fields can say it while a person is still choosing.
func emptyRange(q store.OrderQuery) bool {
	return !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From)
}

// newListView builds the view of one page of a resource's list: the
// query's search text, filters, sort (sortAsked: the query named one) and
// page size, and the page the store answered.
func newListView(res *resource, ls *listing, path string, q string, params map[string]string, sort store.Sort, sortAsked bool, page listResult) *listView {
	l := &listView{R: res, listing: ls, Path: path, Q: q, params: params, Sort: sort,
		SortAsked: sortAsked, PerPage: page.PerPage, Page: page}
	// Pages counted without multiplying (a huge page number must not
	// overflow into a next link); past the end, prev leads to the last page.
	l.Pages = max((page.Total+int64(page.PerPage)-1)/int64(page.PerPage), 1)
	if page.Page > 1 {
		l.Prev = l.PageURL(int(min(int64(page.Page-1), l.Pages)))
	}
	if int64(page.Page) < l.Pages {
		l.Next = l.PageURL(page.Page + 1)
	}
	if page.N > 0 {
		l.First = int64(page.Page-1)*int64(page.PerPage) + 1
		l.Last = l.First + int64(page.N) - 1
		if l.Last > page.Total && !page.TotalIsLowerBound {
			// A member created since the count: never "26–26 of 25".
			l.Last = page.Total
		}
	}
	if page.TotalIsLowerBound && l.Last >= page.Total && page.N == page.PerPage {
		// The search stopped early: there may be more after this page.
		l.Next = l.PageURL(page.Page + 1)
		l.Pages = max(l.Pages, int64(page.Page)+1)
	}
	return l
}

// url writes the list's URL of the query with page p, sort s and page
// size n; defaults are left out, so the plain list is just the path.
func (l *listView) url(p int, s store.Sort, n int) string {
	v := url.Values{}
	if l.Q != "" {
		v.Set("q", l.Q)
	}
	for _, k := range l.listing.Params {
		if x := l.params[k]; x != "" {
			v.Set(k, x)
		}
	}
	if s != "" && s != l.listing.Sorts[0] {
		v.Set("sort", string(s))
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

// newestFirst says the list is sorted by creation or last change, newest
// first: a member created now is on its first page.
func (l *listView) newestFirst() bool {
	return l.Sort == store.SortCreatedDesc || l.Sort == store.SortUpdatedDesc
}

// LiveNewURL is where the live updates' "show" goes for members created
// elsewhere: the first page when they come first (another page fetched
// again would only have its rows pushed along), else this page again.
func (l *listView) LiveNewURL() string {
	if l.newestFirst() {
		return l.PageURL(1)
	}
	return l.URL()
}

// LiveNewUnsure says why members created elsewhere may not show here, which
// an event cannot judge: "search" (they may not match it), "page" (under
// a sort that puts them anywhere, on another page), or "".
func (l *listView) LiveNewUnsure() string {
	switch {
	case strings.TrimSpace(l.Q) != "":
		return "search"
	case !l.newestFirst() && (l.Prev != "" || l.Next != ""):
		return "page"
	}
	return ""
}

// KeepSort says the search form carries the sort: a List sorted by one of
// its column headers (the Inquiry's sort is a field of the form).
func (l *listView) KeepSort() bool { return !l.Inquiry && l.Sort != l.listing.Sorts[0] }

// KeepPerPage says the search form carries a page size that is not the
// default.
func (l *listView) KeepPerPage() bool { return l.PerPage != store.DefaultPerPage }

// SearchHint is the search box's placeholder.
func (l *listView) SearchHint() string { return l.listing.SearchHint }

// QueryMax is the longest search the store reads: the search box's maxlength.
func (l *listView) QueryMax() int { return store.MaxQuery }

// Empty is what the results say when nothing is shown (a page past the
// end says so in Count instead): a heading saying what happened and a
// line saying what to do, with a link.
func (l *listView) Empty() emptyView {
	none := "No " + l.R.Plural
	_, more := l.listing.Describe(l.params)
	all := emptyView{Todo: "Try other words or fewer filters, or", URL: l.Path, LinkText: "show all " + l.R.Plural}
	switch {
	case l.EmptyRange:
		all.Heading = none + ": the “to” date " + l.Param("to") + " is before the “from” date " + l.Param("from")
		all.Todo = "Put the dates the other way round, or"
		return all
	case l.Q != "":
		all.Heading = none + " match “" + l.Q + "”" + more
		return all
	case more != "":
		all.Heading = none + more
		return all
	}
	return emptyView{Heading: none + " yet", Todo: "Start with", URL: l.R.NewPath(), LinkText: "a new " + l.R.Name}
}

// emptyView is the data of partials/empty, in the voice of the error
// pages: Heading says what happened (no full stop), and Todo, then the
// link to URL, what to do about it.
type emptyView struct {
	Heading, Todo, URL, LinkText string
}

// PastEnd says the page asked for lies past the last one.
func (l *listView) PastEnd() bool {
	return l.Page.N == 0 && l.Page.Total > 0 && int64(l.Page.Page) > l.Pages
}

// sortedBy reports whether the rows are in the order of field (a search
// comes in match order whatever the sort).
func (l *listView) sortedBy(field string) bool {
	return !l.MatchOrder() && l.Sort.Field() == field
}

// SortURL is the target of a column header: page 1 sorted by field, the
// other way round when it is already sorted by field (and the List sorts
// by it both ways).
func (l *listView) SortURL(field string) string {
	return l.url(1, l.columnSort(field), l.PerPage)
}

// columnSort is the sort field's header asks for.
func (l *listView) columnSort(field string) store.Sort {
	s := l.listing.Columns[field]
	if l.sortedBy(field) && validSort(l.listing.Sorts, reverse(l.Sort)) {
		s = reverse(l.Sort)
	}
	return s
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
	return "sort " + l.listing.Words(l.columnSort(field))
}

// orderSortWords says an order sort in words: "newest first".
func orderSortWords(s store.Sort) string {
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
	return l.listing.Words(l.Sort)
}

// MatchOrder says the rows are a search's, in match order.
func (l *listView) MatchOrder() bool { return l.Q != "" && !l.Page.Sorted || l.Page.MatchOrder }

// SortTooBroad says a sort was asked for with a search that matches more
// rows than a search is sorted for.
func (l *listView) SortTooBroad() bool { return l.Page.SortTooBroad }

// MaxSorted is how many matches a search is sorted for, in words.
func (l *listView) MaxSorted() string {
	n := strconv.Itoa(store.MaxCandidates)
	for i := len(n) - 3; i > 0; i -= 3 {
		n = n[:i] + "," + n[i:]
	}
	return n
}

// MatchOrderNote says, when a search was asked for in some sort, that the
// sort does not apply to it.
func (l *listView) MatchOrderNote() bool {
	return l.MatchOrder() && l.SortAsked && l.Sort != l.listing.Sorts[0]
}

// SortOptions are the sort choices of a view without column headers (the
// Inquiry).
func (l *listView) SortOptions() []sortOption {
	out := make([]sortOption, len(l.listing.Sorts))
	for i, s := range l.listing.Sorts {
		w := l.listing.Words(s)
		out[i] = sortOption{Value: string(s), Label: strings.ToUpper(w[:1]) + w[1:], Selected: s == l.Sort}
	}
	return out
}

type sortOption struct {
	Value, Label string
	Selected     bool
}

// PrevLabel and NextLabel name the pager's buttons: "Newer" and "Older"
// when the rows are sorted by a date, newest first (or the other way
// round), "Previous" and "Next" otherwise.
func (l *listView) PrevLabel() string { return l.pagerWords()[0] }

// NextLabel: see PrevLabel.
func (l *listView) NextLabel() string { return l.pagerWords()[1] }

func (l *listView) pagerWords() [2]string {
	if f := l.Sort.Field(); !l.MatchOrder() && (f == "created" || f == "updated") {
		if l.Sort.Desc() {
			return [2]string{"Newer", "Older"}
		}
		return [2]string{"Older", "Newer"}
	}
	return [2]string{"Previous", "Next"}
}

// pageSizes are the page-size choices: the default, and up to the most.
var pageSizes = []int{store.DefaultPerPage, 50, store.MaxPerPage}

// PageSizes are the page-size choices under the table.
func (l *listView) PageSizes() []pageLink {
	var out []pageLink
	for _, n := range pageSizes {
		// The first member shown stays on the page of the new size.
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

// TotalText is the number of matching members: "1,234", or "at least
// 10,000" when a search stopped early.
func (l *listView) TotalText() string {
	n := thousands(l.Page.Total)
	if l.Page.TotalIsLowerBound {
		return "at least " + n
	}
	return n
}

// Count is the summary line above the results: how many are shown, or why
// a page past the end is empty (an empty list says why in Empty instead).
func (l *listView) Count() string {
	if l.PastEnd() {
		return "No " + l.R.Plural + " on page " + thousands(int64(l.Page.Page)) + " — " + l.TotalText() + " " +
			plural(l.Page.Total, l.R.Name, l.R.Plural) + " on " + thousands(l.Pages) + " " + plural(l.Pages, "page", "pages")
	}
	return "Showing " + thousands(l.First) + "–" + thousands(l.Last) + " of " + l.TotalText()
}

// Title is the page's title: what it lists ("Search “ad”, page 2"),
// after the List's own title when it has one ("Products: active").
func (l *listView) Title() string {
	var parts []string
	if l.Q != "" {
		parts = append(parts, "search “"+l.Q+"”")
	}
	more, _ := l.listing.Describe(l.params)
	parts = append(parts, more...)
	if l.Page.Page > 1 {
		parts = append(parts, "page "+thousands(int64(l.Page.Page)))
	}
	text := strings.Join(parts, ", ")
	name := l.listing.Title
	if l.Inquiry {
		name = "Inquiry"
	}
	switch {
	case name != "" && text != "":
		return name + ": " + text
	case name != "":
		return name
	case text == "":
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
