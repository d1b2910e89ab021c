package browser_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"orders/store"
)

// TestDocScreenshots renders the pictures in docs/screenshots: the list in
// light and dark, an order, both at phone width, the product catalogue and
// the product picker in the New order form. It runs only when
// ORDERS_DOC_SCREENSHOTS names the folder to write (go test ./browser -run
// TestDocScreenshots with ORDERS_DOC_SCREENSHOTS=$PWD/docs/screenshots).
func TestDocScreenshots(t *testing.T) {
	dir := os.Getenv("ORDERS_DOC_SCREENSHOTS")
	if dir == "" {
		t.Skip("set ORDERS_DOC_SCREENSHOTS to a folder to render the documentation's screenshots")
	}
	e := start(t, true)
	if _, err := e.store.Seed(context.Background(), 40, rand.New(rand.NewPCG(7, 7))); err != nil {
		t.Fatal(err)
	}
	// An order with status buttons to show: the newest confirmed one.
	page, err := e.store.ListOrders(context.Background(), store.OrderQuery{Status: store.Confirmed, PerPage: 1})
	if err != nil || len(page.Orders) == 0 {
		t.Fatalf("no confirmed order among the seeded ones: %v", err)
	}
	orderURL := "/orders/" + strconv.FormatInt(page.Orders[0].ID, 10)
	// The catalogue shows both badges: one demo product is inactive.
	products, err := e.store.ListProducts(context.Background(), store.ProductQuery{Q: "CAP-1"})
	if err != nil || len(products.Products) != 1 {
		t.Fatalf("the demo product CAP-1: %v (%d found)", err, len(products.Products))
	}
	inactive := false
	if _, err := e.store.UpdateProduct(context.Background(), products.Products[0].ID, store.ProductInput{Active: &inactive}, 0); err != nil {
		t.Fatal(err)
	}
	shoot := func(name, url string, width, height int64, dark bool, wait string) {
		t.Helper()
		scheme := "light"
		if dark {
			scheme = "dark"
		}
		if _, err := chromedp.Call(e.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		}); err != nil {
			t.Fatal(err)
		}
		e.do(t, "open "+url, chromedp.EmulateViewport(width, height), chromedp.Navigate(e.base+url), chromedp.WaitVisible(css(wait)))
		buf := run(t, e, "screenshot", chromedp.CaptureScreenshot())
		if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shoot("orders-list", "/orders", 1280, 820, false, "#order-results")
	shoot("orders-list-dark", "/orders", 1280, 820, true, "#order-results")
	shoot("order", orderURL, 1280, 820, false, "#order")
	shoot("new-order-dark", "/orders/new", 1280, 820, true, "#order-form")
	shoot("inquiry", "/orders/inquiry?per_page=5", 1280, 820, false, "#order-results")
	shoot("phone-list", "/orders", 390, 844, false, "#order-results")
	shoot("phone-order-dark", orderURL, 390, 844, true, "#order")
	shoot("products-list", "/products", 1280, 820, false, "#product-results")

	// The product picker: "c" typed in the first item's name of a new
	// order, the suggestions open, the second one active.
	shoot("picker", "/orders/new", 1280, 820, false, "#order-form")
	e.do(t, "type a customer, then c in the first item's name",
		chromedp.SendKeys(css("#customer"), "Grace Hopper"),
		chromedp.Focus(css("#items-0-name")), press("c"),
		chromedp.WaitVisible(css("[role=listbox] [role=option]")), press(kb.ArrowDown+kb.ArrowDown))
	buf := run(t, e, "screenshot", chromedp.CaptureScreenshot())
	if err := os.WriteFile(filepath.Join(dir, "picker.png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}
