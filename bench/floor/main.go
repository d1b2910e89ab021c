// Command floor is the yardstick for GET /orders/<id> (docs/performance.md):
// the least a program built on the same libraries does to answer that page —
// Fiber, one round trip to Redis through go-redis (the order's one HGETALL,
// decoded by the store package), and one html/template execution of the
// project's own layout and order templates — without the application's
// middleware, negotiation, error handling or template engine. bench/run.sh
// compares the application's throughput with this one's.
//
//	go run ./bench/floor -addr 127.0.0.1:3100 -redis redis://127.0.0.1:6379/0 -views .
package main

import (
	"context"
	"flag"
	"fmt"
	"html/template"
	"log"
	"net/http"
	_ "net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"orders/routes"
	"orders/store"
	"orders/store/redisstore"
)

// page is the one template: the layout with its {{embed}} replaced by the
// order page, so one Execute renders everything.
const page = "page"

func main() {
	addr := flag.String("addr", "127.0.0.1:3100", "listen address")
	redisURL := flag.String("redis", "redis://127.0.0.1:6379/0", "Redis URL")
	views := flag.String("views", ".", "folder holding layouts/ and partials/")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof at this address")
	flag.Parse()

	tmpl, err := load(*views)
	if err != nil {
		log.Fatal(err)
	}
	o, err := redis.ParseURL(*redisURL)
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(o)
	st := redisstore.New(rdb, redisstore.Options{})
	if *pprofAddr != "" {
		go func() { log.Println(http.ListenAndServe(*pprofAddr, nil)) }()
	}

	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/orders/:id", func(c *fiber.Ctx) error {
		id, ok := store.ParseID(c.Params("id"))
		if !ok {
			return fiber.ErrNotFound
		}
		ctx, cancel := context.WithTimeout(c.UserContext(), 1500*time.Millisecond)
		defer cancel()
		ord, err := st.GetOrder(ctx, id)
		if err != nil {
			return fiber.ErrNotFound
		}
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		return tmpl.ExecuteTemplate(c.Response().BodyWriter(), page, routes.OrderPage(ord))
	})
	log.Fatal(app.Listen(*addr))
}

// load parses the layout and the order page's templates with the helpers
// they call, and makes the page template.
func load(dir string) (*template.Template, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)+".html"))
		return string(b), err
	}
	t := template.New("").Funcs(routes.TemplateFuncs())
	for _, name := range []string{"partials/orders/show", "partials/orders/items", "partials/notice_message"} {
		src, err := read(name)
		if err != nil {
			return nil, err
		}
		if _, err := t.New(name).Parse(src); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	layout, err := read("layouts/main")
	if err != nil {
		return nil, err
	}
	if !strings.Contains(layout, "{{embed}}") {
		return nil, fmt.Errorf("layouts/main has no {{embed}}")
	}
	src := strings.Replace(layout, "{{embed}}", `{{template "partials/orders/show" .}}`, 1)
	if _, err := t.New(page).Parse(src); err != nil {
		return nil, fmt.Errorf("layouts/main: %w", err)
	}
	return t, nil
}
