package routes

import (
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"strings"

	"github.com/gofiber/template/html/v2"
)

// views renders the templates that gofiber/template/html loads, without its
// Render: v2.1.3 takes one engine-wide lock for every render with a layout
// (so renders never run in parallel) and swaps the "embed" function of the
// shared template set on every render: rendering without a layout while
// another request renders with one can then fail with "call of nil
// function".
//
// Instead, for each layout and each partial, views adds one template
// "<layout>|<partial>" to a copy of the loaded set: the layout's source with
// {{embed}} replaced by {{template "<partial>" .}}. A render is then one
// lookup and one Execute of a set that never changes after start, which
// html/template runs concurrently.
type views struct {
	set *template.Template
}

// newViews loads every template of fsys through the html engine (funcs are
// registered before parsing) and builds the layout pairs.
func newViews(fsys fs.FS, funcs template.FuncMap, layouts []string) (*views, error) {
	engine := html.NewFileSystem(httpFS(fsys), ".html")
	engine.AddFuncMap(funcs)
	// A template that fails to parse is otherwise only logged, and every
	// later render of it fails with "template does not exist".
	if err := engine.Load(); err != nil {
		return nil, fmt.Errorf("loading templates: %w", err)
	}
	set, err := engine.Templates.Clone()
	if err != nil {
		return nil, err
	}
	var partials []string
	for _, t := range engine.Templates.Templates() {
		if strings.HasPrefix(t.Name(), "partials/") {
			partials = append(partials, t.Name())
		}
	}
	for _, layout := range layouts {
		src, err := fs.ReadFile(fsys, layout+".html")
		if err != nil {
			return nil, fmt.Errorf("template %s is missing: %w", layout, err)
		}
		if !strings.Contains(string(src), "{{embed}}") {
			return nil, fmt.Errorf("layout %s has no {{embed}}", layout)
		}
		for _, p := range partials {
			pair := strings.ReplaceAll(string(src), "{{embed}}", `{{template "`+p+`" .}}`)
			if _, err := set.New(layout + "|" + p).Parse(pair); err != nil {
				return nil, fmt.Errorf("%s around %s: %w", layout, p, err)
			}
		}
	}
	return &views{set: set}, nil
}

// Load is done by newViews.
func (v *views) Load() error { return nil }

// Render writes partial name inside layout[0], or alone.
func (v *views) Render(out io.Writer, name string, binding any, layout ...string) error {
	key := name
	if len(layout) > 0 && layout[0] != "" {
		key = layout[0] + "|" + name
	}
	t := v.set.Lookup(key)
	if t == nil {
		return fmt.Errorf("render: template %s does not exist", key)
	}
	return t.Execute(out, binding)
}
