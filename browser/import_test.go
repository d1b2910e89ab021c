package browser_test

// The product import as a person uses it, with JavaScript off (plain
// forms): the upload form, a preview with a change and a bad line (no
// Confirm), a good file's preview and its Confirm; axe-core on each state,
// light and dark, at 360 px too.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

func TestImportPreviewAndConfirmInABrowser(t *testing.T) {
	for _, js := range []bool{false, true} {
		e := start(t, js)
		seedCatalogue(t, e.store)
		src := axeSource(t)
		// axe-core runs where scripts run; with them off the same pages
		// are walked as plain forms.
		axe := func(t *testing.T, what string) {
			if js {
				e.axe(t, src, what)
			}
		}
		dir := t.TempDir()
		file := func(name, content string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		bad := file("bad.csv", "sku,name,unit_price\nMUG-1,Enamel mug XL,13.00\nNEW-1,,1.00\n")
		good := file("good.csv", "sku,name,unit_price\nMUG-1,Enamel mug XL,13.00\nNEW-1,\"New, \"\"one\"\"\",1.00\n")
		for _, scheme := range []string{"light", "dark"} {
			e.colorScheme(t, scheme)
			e.do(t, scheme+" open the import", chromedp.Navigate(e.base+"/products"), chromedp.WaitVisible(css(`a[href="/products/import"]`)),
				chromedp.Click(css(`a[href="/products/import"]`)), chromedp.WaitVisible(css("#import-file")))
			axe(t, scheme+" the upload form")
			e.do(t, scheme+" preview a bad file", chromedp.SetUploadFiles(css("#import-file"), []string{bad}),
				chromedp.Click(css(".import-upload button[type=submit]")), chromedp.WaitVisible(css(".import-errors")))
			if n, err := chromedp.Run(e.ctx, chromedp.Evaluate[int](`document.querySelectorAll(".import-confirm").length`)); err != nil || n != 0 {
				t.Fatalf("a bad file's preview offers a Confirm (%d, %v)", n, err)
			}
			axe(t, scheme+" a bad file's preview")
			e.do(t, scheme+" phone", chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile))
			axe(t, scheme+" phone: a bad file's preview")
			e.do(t, scheme+" desktop", chromedp.EmulateViewport(1280, 900))
			e.do(t, scheme+" preview a good file", chromedp.SetUploadFiles(css("#import-file"), []string{good}),
				chromedp.Click(css(".import-upload button[type=submit]")), chromedp.WaitVisible(css(".import-confirm")))
			axe(t, scheme+" a good file's preview")
		}
		e.do(t, "confirm", chromedp.Click(css(".import-confirm button[type=submit]")), chromedp.WaitVisible(css("#products")))
		axe(t, "the List after an import")
		got, err := chromedp.Run(e.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Imported 2 products: 1 created, 1 changed", "Enamel mug XL", `New, "one"`} {
			if !strings.Contains(got, want) {
				t.Errorf("JavaScript %v: the List after the Confirm lacks %q", js, want)
			}
		}
	}
}
