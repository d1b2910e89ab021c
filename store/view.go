package store

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Saved views are named queries of a List (orders, products or customers)
// that a person keeps: their own, or shared with everyone. The owner is
// whoever made the view, set by the server, never by the request; only
// the owner (or an admin) changes or deletes it.

// View limits.
const (
	MaxViewName  = 100
	MaxViewQuery = 2000
)

// ViewEvents names the views' event feed.
const ViewEvents = "v"

// ViewKeys are the query keys each List a view may name accepts: a
// view's query uses no other key.
var ViewKeys = map[string][]string{
	"orders":    {"q", "status", "from", "to", "sort", "page", "per_page"},
	"products":  {"q", "active", "sort", "page", "per_page"},
	"customers": {"q", "sort", "page", "per_page"},
}

// ViewResources are the Lists a view may name, in the order forms offer them.
var ViewResources = []string{"orders", "products", "customers"}

// View is one saved view.
type View struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Resource  string    `json:"resource"`
	Query     string    `json:"query"`
	Owner     string    `json:"owner"`
	Shared    bool      `json:"shared"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Link is the List the view names, with its query.
func (v *View) Link() string {
	if v.Query == "" {
		return "/" + v.Resource
	}
	return "/" + v.Resource + "?" + v.Query
}

// ViewInput is a create or a change: nil fields were not sent. Owner is
// not the request's: the server sets it on a create from who asks, and a
// change keeps the stored one.
type ViewInput struct {
	Name     *string
	Resource *string
	Query    *string
	Shared   *bool
	Owner    string
	Version  *int64
}

// ApplyView validates in against the stored view cur (nil on create) and
// returns the resulting view, or the field errors.
func ApplyView(cur *View, in ViewInput) (View, map[string]string) {
	errs := map[string]string{}
	var v View
	if cur != nil {
		v = *cur
	} else {
		v.Owner = in.Owner
		if v.Owner == "" {
			errs["owner"] = "is required"
		}
	}
	switch {
	case in.Name != nil:
		if name, msg := CheckText(*in.Name, MaxViewName, true, false); msg != "" {
			errs["name"] = msg
		} else {
			v.Name = name
		}
	case cur == nil:
		errs["name"] = "is required"
	}
	switch {
	case in.Resource != nil:
		r := strings.ToLower(strings.TrimSpace(*in.Resource))
		if !slices.Contains(ViewResources, r) {
			errs["resource"] = "must be one of " + strings.Join(ViewResources, ", ")
		} else {
			v.Resource = r
		}
	case cur == nil:
		errs["resource"] = "is required"
	}
	if in.Query != nil {
		v.Query = *in.Query
	}
	if _, bad := errs["resource"]; !bad {
		if q, msg := CheckViewQuery(v.Resource, v.Query); msg != "" {
			errs["query"] = msg
		} else {
			v.Query = q
		}
	}
	if in.Shared != nil {
		v.Shared = *in.Shared
	}
	if len(errs) > 0 {
		return View{}, errs
	}
	return v, nil
}

// CheckViewQuery reads a query of the List resource names: at most
// MaxViewQuery bytes, written as a URL's query without its "?", every
// key one that List accepts. It returns the query with its pairs sorted
// by key and empty values left out, or the message saying what is wrong.
func CheckViewQuery(resource, raw string) (string, string) {
	raw = strings.TrimSpace(raw)
	switch {
	case len(raw) > MaxViewQuery:
		return "", "must be at most 2000 bytes"
	case strings.HasPrefix(raw, "?"):
		return "", "must be the query without its leading ?, like status=pending&sort=-total"
	case strings.ContainsAny(raw, "#\x00\r\n\t "):
		return "", "must be a URL query string, like status=pending&sort=-total"
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return "", "must be a URL query string, like status=pending&sort=-total"
	}
	keys := ViewKeys[resource]
	for k, vs := range vals {
		if !slices.Contains(keys, k) {
			return "", "may use only the keys " + strings.Join(keys, ", ") + " of the " + resource + " List; " + quoteKey(k) + " is none of them"
		}
		if len(vs) > 1 {
			return "", "names " + quoteKey(k) + " more than once"
		}
		if vs[0] == "" {
			delete(vals, k)
		}
	}
	return vals.Encode(), ""
}

// quoteKey is a query key as a message shows it: quoted, cut to 40 bytes.
func quoteKey(k string) string {
	if len(k) > 40 {
		k = k[:40] + "…"
	}
	return `"` + strings.ToValidUTF8(k, "?") + `"`
}

// ViewQuery is a page of the views a person sees: their own and the
// shared ones (Owner ""; all of them). Q keeps views whose number is Q or
// whose name has a word starting with each of its words (folded).
// Resource, when set, keeps the views of that List.
type ViewQuery struct {
	Owner    string
	Resource string
	Q        string
	Page     int
	PerPage  int
}

// ViewPage is one page of views, by name.
type ViewPage struct {
	Views   []View
	Page    int
	PerPage int
	Total   int64
}

// Views are the saved views.
type Views interface {
	GetView(ctx context.Context, id int64) (*View, error)
	ListViews(ctx context.Context, q ViewQuery) (ViewPage, error)
	CreateView(ctx context.Context, in ViewInput) (*View, error)
	UpdateView(ctx context.Context, id int64, in ViewInput, ifMatch int64) (*View, error)
	DeleteView(ctx context.Context, id int64, ifMatch, version int64) error
	ViewHistory(ctx context.Context, id int64, cursor string, perPage int) (HistoryPage, error)
	AddViewNote(ctx context.Context, id int64, note string) (*HistoryEntry, error)
}
