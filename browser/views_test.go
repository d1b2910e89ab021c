package browser_test

// Saved views: Save view on the orders List keeps its query under a name,
// with JavaScript on (after a live search) and off (a plain form); the
// view's link leads back to the List with that query, and the Orders link
// of the navigation to the last query listed.

import (
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

func TestSaveAViewFromTheOrdersListAndFollowIt(t *testing.T) {
	src, err := os.ReadFile("testdata/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, js := range []bool{true, false} {
		name := map[bool]string{true: "javascript", false: "no-javascript"}[js]
		t.Run(name, func(t *testing.T) {
			e := start(t, js)
			e.seed(t, "Ada Lovelace", "Grace Hopper", "Ada Byron")
			e.do(t, "open the List searched", chromedp.Navigate(e.base+"/orders?q=ada"), chromedp.WaitVisible(css("#saved-views")))
			if js {
				// A live search changes the query Save view keeps.
				e.do(t, "search on", setValue("#q", "grace"))
				e.waitText(t, "#results-count", "1 ")
				e.settled(t)
			}
			want := map[bool]string{true: "q=grace", false: "q=ada"}[js]
			if got := e.jsString(t, `document.querySelector("#save-view [name=query]").value`); got != want {
				t.Fatalf("Save view keeps the query %q, want %q", got, want)
			}
			if js {
				// axe-core runs in the page: only with JavaScript on.
				e.axe(t, string(src), "the orders List with its saved views")
			}
			e.do(t, "save the view",
				chromedp.SendKeys(css("#save-view-name"), "My search"),
				chromedp.Click(css("#save-view button[type=submit]")),
				chromedp.WaitVisible(css(`#saved-views a[aria-current="true"]`)))
			if got := e.path(t); got != "/orders?"+want {
				t.Errorf("after Save view the page is %s, want the List with the query kept", got)
			}
			if got := e.text(t, `#saved-views a[aria-current="true"]`); got != "My search" {
				t.Errorf("the current view's link says %q", got)
			}
			// The whole List, then the view's link again.
			e.do(t, "open the whole List", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css("#saved-views")))
			e.do(t, "follow the view", chromedp.Click(css(`#saved-views a[href="/orders?`+want+`"]`)),
				chromedp.WaitVisible(css(`#saved-views a[aria-current="true"]`)))
			if got := e.path(t); got != "/orders?"+want {
				t.Errorf("the view leads to %s, want /orders?%s", got, want)
			}
			if got := e.jsString(t, `document.getElementById("q").value`); !strings.Contains(want, got) || got == "" {
				t.Errorf("the search box holds %q after following the view %s", got, want)
			}
			// The navigation's Orders link leads back to the last query.
			e.do(t, "go to products", chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css("main")))
			if got := e.jsString(t, `document.querySelector('header.site nav a[href^="/orders"]:not(.brand):not(.button)').getAttribute("href")`); got != "/orders?"+want {
				t.Errorf("the navigation's Orders link is %q, want the last query /orders?%s", got, want)
			}
			e.checkConsole(t)
		})
	}
}
