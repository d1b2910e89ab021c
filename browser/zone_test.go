package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestPagesShowLocalTimesOnceTheZoneIsKnown: in a browser whose zone is
// Asia/Tokyo (UTC+9, no clock changes), the first page is drawn in UTC and
// says so; app.js then keeps the zone in the tz cookie, and from the next
// page on the List's Created and Updated cells, the order's page and the
// date filters' hint are in Tokyo time. axe-core finds nothing on the
// List in its new state.
func TestPagesShowLocalTimesOnceTheZoneIsKnown(t *testing.T) {
	e, clk := startList(t, true)
	orders := seedList(t, e, clk, 2) // created 2025-01-01 and 2025-01-02, at noon UTC
	if _, err := chromedp.Call(e.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"}); err != nil {
		t.Fatalf("emulating the Tokyo time zone: %v", err)
	}
	cell := fmt.Sprintf("#order-row-%d td[data-label=Created]", orders[0].ID)
	e.do(t, "open the list", chromedp.Navigate(e.base+"/orders"), chromedp.WaitVisible(css(cell)))
	if got := e.text(t, cell); got != "2025-01-01 12:00 UTC" {
		t.Errorf("before the zone is known: Created shows %q, want 2025-01-01 12:00 UTC", got)
	}
	e.waitText(t, "#dates-hint", "days in UTC")
	if got := e.eval(t, `document.cookie`); got != "tz=Asia/Tokyo" {
		t.Errorf("after the first page: cookies %q, want tz=Asia/Tokyo", got)
	}

	e.do(t, "reload", chromedp.Reload(), chromedp.WaitVisible(css(cell)))
	e.waitText(t, cell, "2025-01-01 21:00 JST")
	e.waitText(t, fmt.Sprintf("#order-row-%d td[data-label=Created]", orders[1].ID), "2025-01-02 21:00 JST")
	e.waitText(t, "#dates-hint", "days in Asia/Tokyo")
	if got := e.attr(t, "#from", "placeholder"); got != "YYYY-MM-DD" {
		t.Errorf("the from field's placeholder is %q, want YYYY-MM-DD", got)
	}
	e.axe(t, axeSource(t), "the List in Tokyo time")

	e.do(t, "the order's page", chromedp.Navigate(fmt.Sprintf("%s/orders/%d", e.base, orders[0].ID)), chromedp.WaitVisible(css("dl")))
	e.waitText(t, "main", "2025-01-01 21:00 JST")
	e.axe(t, axeSource(t), "an order's page in Tokyo time")
}
