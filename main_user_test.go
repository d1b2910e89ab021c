package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
)

// storeAt is a store over the Redis at addr, as the server opens it.
func storeAt(t *testing.T, addr string) *redisstore.Store {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return redisstore.New(rdb, redisstore.Options{})
}

// userAdd runs `orders user add` with args, stdin and env, and returns
// its error and what it wrote.
func userAdd(stdin string, env map[string]string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	err := runUser(context.Background(), append([]string{"add"}, args...), envOf(env), strings.NewReader(stdin), &out, &errOut)
	return out.String() + errOut.String(), err
}

// TestUserAddMakesAccountsWhileTheServiceRuns: `orders user add NAME
// -role ROLE` with the password on stdin makes the account in the Redis
// a running server uses (REDIS_URL or -redis), and the server's store
// then has accounts; a short password, a first account that is not an
// admin, a missing role or name, and a name taken are refused with a
// message saying so, and make nothing.
func TestUserAddMakesAccountsWhileTheServiceRuns(t *testing.T) {
	mr := miniredis.RunT(t)
	base, stop := startRun(t, "-redis", mr.Addr())
	defer stop()
	s := storeAt(t, mr.Addr())
	ctx := context.Background()

	refusals := []struct {
		what, stdin string
		args        []string
		want        string
	}{
		{"a short password", "short pass\n", []string{"root", "-role", "admin", "-redis", mr.Addr()}, "at least 12 characters"},
		{"no password", "", []string{"root", "-role", "admin", "-redis", mr.Addr()}, "no password on stdin"},
		{"a first account that is a clerk", "a good long password\n", []string{"root", "-role", "clerk", "-redis", mr.Addr()}, "first user must be an enabled admin"},
		{"no role", "a good long password\n", []string{"root", "-redis", mr.Addr()}, "-role is required"},
		{"an unknown role", "a good long password\n", []string{"root", "-role", "boss", "-redis", mr.Addr()}, "role must be one of"},
		{"no name", "a good long password\n", []string{"-role", "admin", "-redis", mr.Addr()}, "name is missing"},
		{"a bad name", "a good long password\n", []string{"ro ot", "-role", "admin", "-redis", mr.Addr()}, "name must be 1 to 64"},
		{"a password far too long", strings.Repeat("p", 5000) + "\n", []string{"root", "-role", "admin", "-redis", mr.Addr()}, "at most 256 bytes"},
	}
	for _, r := range refusals {
		out, err := userAdd(r.stdin, nil, r.args...)
		if err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: %v (%s); want an error saying %q", r.what, err, out, r.want)
		}
	}
	if has, _ := s.HasUsers(ctx); has {
		t.Fatalf("refused adds made an account")
	}

	// The password is the first line, its line end (\r\n too) not part
	// of it; REDIS_URL names the Redis as it does for the server.
	out, err := userAdd("Pass phrase with spaces\r\nsecond line\n", map[string]string{"REDIS_URL": "redis://" + mr.Addr()}, "Root", "-role", "admin")
	if err != nil || !strings.Contains(out, "made user 1, root (admin)") {
		t.Fatalf("user add root: %v, %q", err, out)
	}
	if _, err := s.CheckPassword(ctx, "root", "Pass phrase with spaces"); err != nil {
		t.Errorf("root's password as typed: %v", err)
	}
	out, err = userAdd("another password!\n", nil, "-role", "viewer", "-redis", mr.Addr(), "vera")
	if err != nil || !strings.Contains(out, "(viewer)") {
		t.Errorf("user add with the name after the flags: %v, %q", err, out)
	}
	if _, err := userAdd("another password!\n", nil, "root", "-role", "clerk", "-redis", mr.Addr()); err == nil || !strings.Contains(err.Error(), "already the name of user 1") {
		t.Errorf("a taken name: %v; want it refused naming user 1", err)
	}
	if has, _ := s.HasUsers(ctx); !has {
		t.Errorf("the server's store has no accounts after user add")
	}
	if getStatus(t, base, "/healthz") != 200 {
		t.Errorf("the server stopped answering while accounts were made")
	}
	h, err := s.UserHistory(ctx, 1, "", 0)
	if err != nil || len(h.Entries) != 1 || h.Entries[0].Via != "cli" {
		t.Errorf("root's history: %+v, %v; want one entry via cli", h, err)
	}
}

// TestUserAddOnTheEmbeddedStore: with no Redis configured, user add
// changes the embedded store's data file while the server is stopped,
// and refuses, saying why, while a server holds it.
func TestUserAddOnTheEmbeddedStore(t *testing.T) {
	data := filepath.Join(t.TempDir(), "orders.json")
	if out, err := userAdd("a good long password\n", nil, "root", "-role", "admin", "-data", data); err != nil {
		t.Fatalf("user add on a stopped embedded store: %v, %s", err, out)
	}
	base, stop := startRun(t, "-data", data)
	defer stop()
	_, err := userAdd("a good long password\n", nil, "other", "-role", "admin", "-data", data)
	if err == nil || !strings.Contains(err.Error(), "while the server is stopped") {
		t.Errorf("user add on the data file of a running server: %v; want a refusal saying the server must be stopped or -redis used", err)
	}
	if getStatus(t, base, "/healthz") != 200 {
		t.Errorf("the server stopped answering")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-repair", "-data", data}, envOf(nil), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0 missing index entries") {
		t.Errorf("repair after user add: %s", out.String())
	}
}

// TestOrdersAdminAtStart: ORDERS_ADMIN=name:password makes that admin at
// start (and makes an existing account an enabled admin with that
// password); a value that is not name:password with a good name and
// password stops the start with a message that never repeats the
// password.
func TestOrdersAdminAtStart(t *testing.T) {
	for _, c := range []struct{ v, want string }{
		{"rootonly", "must be name:password"},
		{":a good long password", "the name is required"},
		{"Bad Name:a good long password", "the name must be 1 to 64"},
		{"root:short", "the password must be at least 12"},
		{"root:", "the password must be at least 12"},
	} {
		_, err := parseConfig(nil, envOf(map[string]string{"ORDERS_ADMIN": c.v}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ORDERS_ADMIN=%q: %v; want an error saying %q", c.v, err, c.want)
		}
		if _, pw, _ := strings.Cut(c.v, ":"); err != nil && pw != "" && strings.Contains(err.Error(), pw) {
			t.Errorf("ORDERS_ADMIN=%q: the error %q repeats the password", c.v, err)
		}
	}
	c, err := parseConfig(nil, envOf(map[string]string{"ORDERS_ADMIN": "Boss:pass:word with colons"}), io.Discard)
	if err != nil || c.admin == nil || c.admin.name != "boss" || c.admin.password != "pass:word with colons" {
		t.Fatalf("ORDERS_ADMIN with colons in the password: %+v, %v", c.admin, err)
	}

	mr := miniredis.RunT(t)
	s := storeAt(t, mr.Addr())
	ctx := context.Background()
	mkViewer := func() {
		for _, in := range []store.UserInput{
			{Name: ptr("first"), Role: ptr("admin"), Password: ptr("first's password")},
			{Name: ptr("boss"), Role: ptr("viewer"), Password: ptr("old password!!"), Disabled: ptr(true)},
		} {
			if _, err := s.CreateUser(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
	}
	mkViewer()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	w := &logWriter{addr: make(chan string, 1)}
	go func() {
		done <- run(rctx, []string{"-addr", "127.0.0.1:0", "-redis", mr.Addr()},
			envOf(map[string]string{"ORDERS_ADMIN": "boss:the new password"}), w, io.Discard)
	}()
	select {
	case <-w.addr:
	case err := <-done:
		t.Fatalf("run with ORDERS_ADMIN ended: %v\n%s", err, w.buf.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("run with ORDERS_ADMIN did not serve:\n%s", w.buf.String())
	}
	cancel()
	<-done
	u, err := s.CheckPassword(ctx, "boss", "the new password")
	if err != nil || u.Role != store.RoleAdmin || u.Disabled {
		t.Errorf("boss after a start with ORDERS_ADMIN: %+v, %v; want an enabled admin with the new password", u, err)
	}
	if strings.Contains(w.buf.String(), "the new password") {
		t.Errorf("the log shows ORDERS_ADMIN's password:\n%s", w.buf.String())
	}
}

// TestTheBinaryTakesTheUserSubcommand: the built program dispatches
// `orders user add` (password on stdin) and exits non-zero with the
// reason on a refusal.
func TestTheBinaryTakesTheUserSubcommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "orders")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mr := miniredis.RunT(t)
	add := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"user", "add"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+mr.Addr())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := add("too short\n", "root", "-role", "admin"); err == nil || !strings.Contains(out, "at least 12 characters") {
		t.Errorf("a short password: %v, %q; want a non-zero exit saying at least 12 characters", err, out)
	}
	if out, err := add("a good long password\n", "root", "-role", "admin"); err != nil || !strings.Contains(out, "made user 1, root (admin)") {
		t.Errorf("user add: %v, %q", err, out)
	}
	if _, err := storeAt(t, mr.Addr()).CheckPassword(context.Background(), "root", "a good long password"); err != nil {
		t.Errorf("the account the binary made: %v", err)
	}
}
