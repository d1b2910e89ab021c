package testutil

import (
	"context"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/gofiber/fiber/v2"
)

// Host is the Host header app.Test sends: an application tested through
// app.Test allows it (routes.Config.AllowedHosts).
const Host = "example.com"

// embedded are the folders main.go embeds in the binary.
var embedded = []string{"layouts", "partials", "public"}

var files = sync.OnceValues(func() (fs.FS, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	m := fstest.MapFS{}
	for _, dir := range embedded {
		err := fs.WalkDir(os.DirFS(root), dir, func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
			m[name] = &fstest.MapFile{Data: b, Mode: 0o444}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
})

// Files returns the folders main.go embeds (layouts/, partials/, public/)
// as the repository holds them, and nothing else: what routes.Config.Files
// is in the binary. main's TestEmbeddedFilesAreTheTests checks that they
// are the same files. They are read once per test binary.
func Files(t testing.TB) fs.FS {
	t.Helper()
	f, err := files()
	if err != nil {
		t.Fatalf("reading the application's files: %v", err)
	}
	return f
}

// Root returns the repository's root: the nearest folder above the
// working directory (a package's folder, under go test) with a go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fs.ErrNotExist
		}
		dir = parent
	}
}

// Serve serves app on a free loopback port until the test ends, and
// returns the address it listens on ("127.0.0.1:port").
func Serve(t testing.TB, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln)
	t.Cleanup(func() { _ = app.ShutdownWithContext(context.Background()) })
	return ln.Addr().String()
}

// Logger returns a logger for an application under test: its warnings and
// errors go to the test's log (shown when the test fails or with -v).
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
