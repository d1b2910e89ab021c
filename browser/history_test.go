package browser_test

// History and notes in the browser : a note added
// from a record's page with JavaScript (htmx swaps the timeline) and
// without it (a plain form, 303 back, the flash), what the person sees,
// where the focus goes, and the text kept after a refusal. The pages
// themselves are in the axe, Nu and HTML_CodeSniffer tables
// (seedHistory).

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"orders/store"
	"orders/store/redisstore"
)

// historySeed is what seedHistory stores: an order whose timeline holds
// notes and changes of every kind and whose history has more than a page
// (older is the cursor of its second page), an order deleted after a
// note, and a product with a change and a note.
type historySeed struct {
	order, deleted, product int64
	older                   string
}

// seedHistory stores records whose histories the checkers walk: by
// alice on the web and bob through the API, notes with markup and
// several lines, a change of fields, of items and of status.
func seedHistory(t *testing.T, st *redisstore.Store) historySeed {
	t.Helper()
	str := func(s string) *string { return &s }
	alice := store.WithActor(context.Background(), "alice", "web")
	bob := store.WithActor(context.Background(), "bob", "api")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	o, err := st.CreateOrder(alice, store.OrderInput{Customer: str("Katherine Johnson"), Email: str("kj@example.com"), HasItems: true,
		Items: []store.ItemInput{{SKU: "MUG-1", Name: "Enamel mug", Quantity: "2", UnitPrice: "12.50"},
			{SKU: "PEN-2", Name: "Gel pen", Quantity: "10", UnitPrice: "1.05"}}})
	must(err)
	for i := 1; i <= 26; i++ {
		_, err := st.AddOrderNote(bob, o.ID, fmt.Sprintf("Routine check %d.", i))
		must(err)
	}
	_, err = st.UpdateOrder(alice, o.ID, store.OrderInput{Customer: str("Katherine G. Johnson"), Email: str(""), Notes: str("Back door.")}, 0)
	must(err)
	_, err = st.UpdateOrder(bob, o.ID, store.OrderInput{HasItems: true, Items: []store.ItemInput{
		{SKU: "MUG-1", Name: "Enamel mug", Quantity: "3", UnitPrice: "12.50"},
		{Name: "Tea towel <linen> & co", Quantity: "1", UnitPrice: "8.00"}}}, 0)
	must(err)
	_, err = st.AddOrderNote(alice, o.ID, "Called <Katherine> & co:\nshe wants it by Friday.")
	must(err)
	_, err = st.UpdateOrder(alice, o.ID, store.OrderInput{Status: str("confirmed")}, 0)
	must(err)
	_, err = st.AddOrderNote(alice, o.ID, strings.Repeat("A long note that wraps on a phone. ", 12))
	must(err)
	page, err := st.OrderHistory(context.Background(), o.ID, "", 0)
	must(err)
	if page.Next == "" {
		t.Fatalf("order %d's history fits one page (%d entries): want two", o.ID, len(page.Entries))
	}

	d, err := st.CreateOrder(alice, store.OrderInput{Customer: str("Deleted After A Note")})
	must(err)
	_, err = st.AddOrderNote(alice, d.ID, "Customer cancelled by phone.")
	must(err)
	must(st.DeleteOrder(alice, d.ID, 0, 0))

	p, err := st.CreateProduct(bob, store.ProductInput{SKU: str("HIS-1"), Name: str("Ledger <A4>"), UnitPrice: str("4.20")})
	must(err)
	inactive := false
	_, err = st.UpdateProduct(alice, p.ID, store.ProductInput{UnitPrice: str("4.50"), Active: &inactive}, 0)
	must(err)
	_, err = st.AddProductNote(alice, p.ID, "Supplier raised the price; out of stock until May.")
	must(err)
	return historySeed{order: o.ID, deleted: d.ID, product: p.ID, older: page.Next}
}

// pages are the addresses of the seeded records' pages and histories.
func (h historySeed) pages() []string {
	o, d, p := strconv.FormatInt(h.order, 10), strconv.FormatInt(h.deleted, 10), strconv.FormatInt(h.product, 10)
	return []string{"/orders/" + o, "/orders/" + o + "/history", "/orders/" + o + "/history?before=" + h.older,
		"/orders/" + d + "/history", "/products/" + p, "/products/" + p + "/history"}
}

// entryTexts are the texts of the timeline's (or history page's) entries,
// newest first.
func (e *env) entryTexts(t *testing.T, sel string) []string {
	t.Helper()
	s := e.jsString(t, `[...document.querySelectorAll(`+strconv.Quote(sel+" li.entry")+`)].map(li => li.textContent.replace(/\s+/g, " ").trim()).join("\n")`)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestNoteWithJavaScript: a note typed on an order's page is added in
// place (no page load): the new entry heads the timeline, the textarea is
// emptied and has the focus (for another note), the polite region says
// it. A note the server refuses (too long, blank) leaves the typed text
// in the field with its message beside it, the field focused and marked,
// the alert region saying why; the next good note clears all of that.
// The same on a product's page.
func TestNoteWithJavaScript(t *testing.T) {
	e := start(t, true)
	o := createOrder(t, e.store, "Mary Jackson", "")
	page := fmt.Sprintf("/orders/%d", o.ID)
	e.do(t, "open the order", chromedp.Navigate(e.base+page), chromedp.WaitVisible(css("#order-history-note")))
	e.setMarker(t)
	e.do(t, "add a note", chromedp.SendKeys(css("#order-history-note"), "Wants a gift wrap.\nRed paper."),
		chromedp.Click(css("#order-history .note-form button[type=submit]")))
	e.waitText(t, "#order-history li.entry", "Wants a gift wrap.")
	e.waitText(t, "#notice", fmt.Sprintf("Note added to order %d.", o.ID))
	if !e.markerKept(t) {
		t.Error("adding a note reloaded the page; want htmx to swap the timeline in place")
	}
	entries := e.entryTexts(t, "#order-history")
	if len(entries) != 2 || !strings.HasPrefix(entries[0], "Note by anonymous on the web") || !strings.Contains(entries[0], "Red paper.") ||
		!strings.HasPrefix(entries[1], "Created by anonymous") {
		t.Errorf("the timeline after a note: %q; want the note first (by anonymous on the web), then the create", entries)
	}
	// Its lines are kept (white-space: pre-wrap): two lines, not one.
	if got := e.jsString(t, `document.querySelector("#order-history .entry-text").innerText`); !strings.Contains(got, "wrap.\nRed") {
		t.Errorf("the note of two lines shows as %q, want its two lines", got)
	}
	// Every entry, a note's too, has the timeline's dot and starts with its
	// head (no blank lines above it, no stray quotation mark).
	if bad := e.jsString(t, timelineOutOfShape("#order-history")); bad != "" {
		t.Errorf("the timeline's entries are out of shape:\n%s", bad)
	}
	if got := run(t, e, "the note field", chromedp.Value(css("#order-history-note"))); got != "" {
		t.Errorf("after a note the field holds %q, want it empty", got)
	}
	e.waitFocus(t, "after a note", "#order-history-note")
	if got := e.attr(t, "#order-history-note", "aria-invalid"); got != "" {
		t.Errorf("after a good note the field is aria-invalid=%q", got)
	}

	// Too long (the server's check: a script may set what maxlength stops
	// a person typing), then blank.
	long := strings.Repeat("x", store.MaxNote+1)
	for _, c := range []struct{ name, value, msg string }{
		{"too long", long, "must be at most 2000 characters"},
		{"blank", "   ", "is required"},
	} {
		e.do(t, "a "+c.name+" note",
			chromedp.Evaluate[chromedp.Void](`document.querySelector("#order-history .note-form").noValidate = true;
			  document.getElementById("order-history-note").value = `+strconv.Quote(c.value)),
			chromedp.Click(css("#order-history .note-form button[type=submit]")),
			chromedp.WaitVisible(css("#order-history-note-err")))
		e.waitText(t, "#order-history-note-err", c.msg)
		e.waitText(t, "#notice-alert", "The note was not added: it "+c.msg+".")
		if got := run(t, e, "the note field", chromedp.Value(css("#order-history-note"))); got != c.value {
			t.Errorf("after a %s note the field holds %d characters %.20q…, want the %d sent kept", c.name, len(got), got, len(c.value))
		}
		if got := e.attr(t, "#order-history-note", "aria-invalid"); got != "true" {
			t.Errorf("after a %s note the field is aria-invalid=%q, want true", c.name, got)
		}
		e.waitFocus(t, "after a "+c.name+" note", "#order-history-note")
		if n := len(e.entryTexts(t, "#order-history")); n != 2 {
			t.Errorf("after a %s note the timeline has %d entries, want still 2", c.name, n)
		}
		if e.regionText(t, "notice") != "" {
			t.Errorf("after a %s note the success region still says %q", c.name, e.regionText(t, "notice"))
		}
	}
	if n := e.jsString(t, `document.querySelectorAll("#order-history, #order-history-note, #order-history-note-err").length`); n != "3" {
		t.Errorf("after the refused notes the page holds %s of the timeline, its field and its message, want one each", n)
	}
	e.do(t, "a good note after the errors",
		chromedp.Evaluate[chromedp.Void](`document.getElementById("order-history-note").value = ""`),
		chromedp.SendKeys(css("#order-history-note"), "Paper found."),
		chromedp.Click(css("#order-history .note-form button[type=submit]")),
		chromedp.WaitNotPresent(css("#order-history-note-err")))
	e.waitText(t, "#order-history li.entry", "Paper found.")
	e.waitText(t, "#notice", "Note added")
	if got := e.regionText(t, "notice-alert"); got != "" {
		t.Errorf("after a good note the alert region still says %q", got)
	}
	if got := run(t, e, "the note field", chromedp.Value(css("#order-history-note"))); got != "" {
		t.Errorf("after a good note the field holds %q, want it empty", got)
	}
	e.waitFocus(t, "after the good note", "#order-history-note")
	if !e.markerKept(t) {
		t.Error("the notes reloaded the page")
	}
	if got, err := e.store.GetOrder(context.Background(), o.ID); err != nil || got.Version != o.Version {
		t.Errorf("after notes the order is %+v, %v; want it at version %d still", got, err, o.Version)
	}

	// The page's other actions keep the timeline: a status change from the
	// page shows its entry at the top.
	e.do(t, "confirm from the page", chromedp.Click(css(".transitions button")))
	e.waitText(t, "#order h1", "Confirmed")
	e.waitText(t, "#order-history li.entry", "Status: Pending → Confirmed")

	// A product's page, the same form.
	p, err := e.store.CreateProduct(context.Background(), store.ProductInput{SKU: strp("NB-7"), Name: strp("Notebook"), UnitPrice: strp("3.00")})
	if err != nil {
		t.Fatal(err)
	}
	e.do(t, "a note on a product", chromedp.Navigate(fmt.Sprintf("%s/products/%d", e.base, p.ID)), chromedp.WaitVisible(css("#product-history-note")),
		chromedp.SendKeys(css("#product-history-note"), "Reorder at 10."),
		chromedp.Click(css("#product-history .note-form button[type=submit]")))
	e.waitText(t, "#product-history li.entry", "Reorder at 10.")
	e.waitText(t, "#notice", fmt.Sprintf("Note added to product %d.", p.ID))
	e.waitFocus(t, "after a product note", "#product-history-note")
}

func strp(s string) *string { return &s }

// timelineOutOfShape is an expression that lists the entries of the
// timeline (or history page) sel that do not look like entries: a marker
// other than the dot, a head that does not start the entry, text after
// its last part.
func timelineOutOfShape(sel string) string {
	return `[...document.querySelectorAll(` + strconv.Quote(sel+" li.entry") + `)].map(li => {
	  const out = [], dot = getComputedStyle(li, "::before"), after = getComputedStyle(li, "::after").content;
	  if (dot.content !== '""' || dot.borderRadius !== "50%") out.push("marker " + dot.content + " " + dot.borderRadius);
	  if (after !== "none" && after !== "normal") out.push("text after it: " + after);
	  const head = li.querySelector(".entry-head"), r = li.getBoundingClientRect();
	  if (!head || head.getBoundingClientRect().top - r.top > 4) out.push("its head starts " + (head ? Math.round(head.getBoundingClientRect().top - r.top) + " px down" : "nowhere"));
	  const last = li.lastElementChild;
	  if (last && r.bottom - last.getBoundingClientRect().bottom > 4) out.push(Math.round(r.bottom - last.getBoundingClientRect().bottom) + " px blank below");
	  return out.length ? li.className + ": " + out.join("; ") : "";
	}).filter(Boolean).join("\n")`
}

// submitPlain clicks the submit button sel of a plain form (no
// JavaScript) and waits for the page it leads to: the old page's
// elements are no sign that the new one has come.
func (e *env) submitPlain(t *testing.T, what, sel string, before ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	e.setMarker(t)
	e.do(t, what, append(before, chromedp.Click(css(sel)))...)
	e.waitUntil(t, what+": the next page", `window.__noReload !== true && document.readyState === "complete"`)
}

// TestNoteWithoutJavaScript: the note form is a plain form: a note leads
// back to the record's page (at its timeline) with the note in it, the
// field empty and the notice shown once; a refused note answers the
// record's page with the typed text kept and the message beside the
// field. The history page's links work, and a deleted record's history
// says so and offers no form.
func TestNoteWithoutJavaScript(t *testing.T) {
	e := start(t, false)
	o := createOrder(t, e.store, "Dorothy Vaughan", "")
	page := fmt.Sprintf("/orders/%d", o.ID)
	submit := "#order-history .note-form button[type=submit]"
	e.do(t, "open the order", chromedp.Navigate(e.base+page), chromedp.WaitVisible(css("#order-history-note")))
	e.submitPlain(t, "add a note", submit, chromedp.SendKeys(css("#order-history-note"), "Ships with the next van."))
	e.waitText(t, "#order-history li.entry", "Ships with the next van.")
	e.waitText(t, "#notice", fmt.Sprintf("Note added to order %d.", o.ID))
	if got := e.path(t); got != page+"#order-history" {
		t.Errorf("after a plain note the URL is %q, want %s#order-history", got, page)
	}
	if got := run(t, e, "the note field", chromedp.Value(css("#order-history-note"))); got != "" {
		t.Errorf("after a note the field holds %q, want it empty", got)
	}

	// Refused: a note of spaces (the browser's own check of required
	// waived, as a browser without it would send it).
	e.submitPlain(t, "a blank note", submit,
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#order-history .note-form").noValidate = true;
		  document.getElementById("order-history-note").value = "   "`))
	e.waitText(t, "#order-history-note-err", "is required")
	e.waitText(t, "#notice-alert", "The note was not added: it is required.")
	if got := e.text(t, "#order h1"); !strings.HasPrefix(got, fmt.Sprintf("Order %d", o.ID)) {
		t.Errorf("a refused note answers a page whose heading is %q, want the order's page", got)
	}
	if got := run(t, e, "the note field", chromedp.Value(css("#order-history-note"))); got != "   " {
		t.Errorf("after a refused note the field holds %q, want the text sent", got)
	}
	if got := e.attr(t, "#order-history-note", "aria-describedby"); got != "order-history-note-err" {
		t.Errorf("the refused field is described by %q, want its message", got)
	}
	long := strings.Repeat("y", store.MaxNote+1)
	e.submitPlain(t, "a note too long", submit,
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#order-history .note-form").noValidate = true;
		  document.getElementById("order-history-note").value = `+strconv.Quote(long)))
	e.waitText(t, "#order-history-note-err", "must be at most 2000 characters")
	if got := run(t, e, "the note field", chromedp.Value(css("#order-history-note"))); got != long {
		t.Errorf("after a note too long the field holds %d characters, want the %d sent", len(got), len(long))
	}
	if n := len(e.entryTexts(t, "#order-history")); n != 2 {
		t.Errorf("after refused notes the timeline has %d entries, want 2", n)
	}
	e.submitPlain(t, "a good note after the errors", submit,
		chromedp.Evaluate[chromedp.Void](`document.getElementById("order-history-note").value = "Van booked."`))
	e.waitText(t, "#order-history li.entry", "Van booked.")
	if n := e.jsString(t, `document.querySelectorAll("#order-history-note-err").length`); n != "0" {
		t.Errorf("after a good note the page still shows %s messages", n)
	}

	// The whole history: more than the timeline's five, in pages.
	for i := range 30 {
		if _, err := e.store.AddOrderNote(context.Background(), o.ID, fmt.Sprintf("Note %02d.", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	e.do(t, "the whole history", chromedp.Navigate(e.base+page), chromedp.WaitVisible(css("#order-history")),
		chromedp.Click(css(`#order-history a[href="`+page+`/history"]`)), chromedp.WaitVisible(css("#order-history-page")))
	if bad := e.jsString(t, timelineOutOfShape("#order-history-page")); bad != "" {
		t.Errorf("the history page's entries are out of shape:\n%s", bad)
	}
	if n := len(e.entryTexts(t, "#order-history-page")); n != store.HistoryPerPage {
		t.Errorf("the history page shows %d entries, want %d", n, store.HistoryPerPage)
	}
	e.do(t, "older entries", chromedp.Click(css(`#order-history-page a[rel="next"]`)), chromedp.WaitVisible(css("#order-history-page")))
	older := e.entryTexts(t, "#order-history-page")
	if len(older) != 33-store.HistoryPerPage || !strings.HasPrefix(older[len(older)-1], "Created by anonymous") {
		t.Errorf("the older entries: %q; want %d, the create last", older, 33-store.HistoryPerPage)
	}
	e.do(t, "back to the order", chromedp.Click(css(`#order-history-page a[href="`+page+`"]`)), chromedp.WaitVisible(css("#order")))

	// A deleted order's history: said so, no form, a way back to the list.
	if err := e.store.DeleteOrder(context.Background(), o.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	e.do(t, "a deleted order's history", chromedp.Navigate(e.base+page+"/history"), chromedp.WaitVisible(css("#order-history-page")))
	e.waitText(t, "#order-history-page", fmt.Sprintf("Order %d has been deleted", o.ID))
	if n := e.jsString(t, `document.querySelectorAll("main form, main textarea").length`); n != "0" {
		t.Errorf("a deleted order's history page has %s forms or fields, want none", n)
	}
	if got := e.entryTexts(t, "#order-history-page"); len(got) == 0 || !strings.HasPrefix(got[0], "Deleted by anonymous") {
		t.Errorf("a deleted order's history starts %q, want the delete", got)
	}
}
