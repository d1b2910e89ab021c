package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
)

// TestApplyUserChecksEveryField: a create needs a name, a role and a
// password; a name is folded to lower case and holds only a-z 0-9 . _ -;
// the display name defaults to the name; a password has at least 12
// characters and at most 256 bytes; a change keeps what it does not send.
func TestApplyUserChecksEveryField(t *testing.T) {
	good := "correct horse battery"
	cases := []struct {
		what string
		in   UserInput
		errs map[string]string // field -> the start of its message; nil: valid
		want User
	}{
		{"a valid create", UserInput{Name: ptr("alice"), Role: ptr("clerk"), Password: &good}, nil,
			User{Name: "alice", DisplayName: "alice", Role: RoleClerk}},
		{"upper case folded, spaces trimmed", UserInput{Name: ptr("  Alice.B_2-x "), Role: ptr("admin"), Password: &good, DisplayName: ptr(" Alice B ")}, nil,
			User{Name: "alice.b_2-x", DisplayName: "Alice B", Role: RoleAdmin}},
		{"a disabled create", UserInput{Name: ptr("bob"), Role: ptr("viewer"), Password: &good, Disabled: ptr(true)}, nil,
			User{Name: "bob", DisplayName: "bob", Role: RoleViewer, Disabled: true}},
		{"64 characters of name", UserInput{Name: ptr(strings.Repeat("a", 64)), Role: ptr("viewer"), Password: &good}, nil,
			User{Name: strings.Repeat("a", 64), DisplayName: strings.Repeat("a", 64), Role: RoleViewer}},
		{"nothing", UserInput{}, map[string]string{"name": "is required", "role": "is required", "password": "is required"}, User{}},
		{"an empty name", UserInput{Name: ptr("  "), Role: ptr("clerk"), Password: &good}, map[string]string{"name": "is required"}, User{}},
		{"65 characters of name", UserInput{Name: ptr(strings.Repeat("a", 65)), Role: ptr("clerk"), Password: &good}, map[string]string{"name": "must be 1 to 64"}, User{}},
		{"a space inside the name", UserInput{Name: ptr("al ice"), Role: ptr("clerk"), Password: &good}, map[string]string{"name": "must be 1 to 64"}, User{}},
		{"a colon in the name", UserInput{Name: ptr("al:ice"), Role: ptr("clerk"), Password: &good}, map[string]string{"name": "must be 1 to 64"}, User{}},
		{"a letter outside a-z", UserInput{Name: ptr("zoé"), Role: ptr("clerk"), Password: &good}, map[string]string{"name": "must be 1 to 64"}, User{}},
		{"a Kelvin sign that folds to k", UserInput{Name: ptr("\u212a"), Role: ptr("clerk"), Password: &good}, map[string]string{"name": "must be 1 to 64"}, User{}},
		{"an unknown role", UserInput{Name: ptr("alice"), Role: ptr("root"), Password: &good}, map[string]string{"role": "must be one of"}, User{}},
		{"a role in capitals", UserInput{Name: ptr("alice"), Role: ptr("Admin"), Password: &good}, map[string]string{"role": "must be one of"}, User{}},
		{"11 characters of password", UserInput{Name: ptr("alice"), Role: ptr("clerk"), Password: ptr("elevenchars")}, map[string]string{"password": "must be at least 12"}, User{}},
		{"12 characters, some of two bytes", UserInput{Name: ptr("alice"), Role: ptr("clerk"), Password: ptr("ééééééééééé1")}, nil,
			User{Name: "alice", DisplayName: "alice", Role: RoleClerk}},
		{"257 bytes of password", UserInput{Name: ptr("alice"), Role: ptr("clerk"), Password: ptr(strings.Repeat("x", 257))}, map[string]string{"password": "must be at most 256 bytes"}, User{}},
		{"a password with a newline", UserInput{Name: ptr("alice"), Role: ptr("clerk"), Password: ptr("twelve chars\nmore")}, map[string]string{"password": "must not contain control"}, User{}},
		{"a password that is not UTF-8", UserInput{Name: ptr("alice"), Role: ptr("clerk"), Password: ptr("twelve chars \xff")}, map[string]string{"password": "must be valid UTF-8"}, User{}},
		{"a display name of 121 characters", UserInput{Name: ptr("alice"), Role: ptr("clerk"), Password: &good, DisplayName: ptr(strings.Repeat("d", 121))}, map[string]string{"display_name": "must be at most 120"}, User{}},
		{"a display name with a bidi override", UserInput{Name: ptr("alice"), Role: ptr("clerk"), Password: &good, DisplayName: ptr("a\u202eb")}, map[string]string{"display_name": "must not contain bidirectional"}, User{}},
	}
	for _, c := range cases {
		u, errs := ApplyUser(nil, c.in)
		if c.errs == nil {
			if errs != nil || u != c.want {
				t.Errorf("%s: got %+v, %v; want %+v", c.what, u, errs, c.want)
			}
			continue
		}
		if len(errs) != len(c.errs) {
			t.Errorf("%s: errors %v; want errors for %v", c.what, errs, c.errs)
		}
		for f, msg := range c.errs {
			if !strings.HasPrefix(errs[f], msg) {
				t.Errorf("%s: %s says %q; want it to start %q", c.what, f, errs[f], msg)
			}
		}
	}

	cur := &User{ID: 3, Name: "alice", DisplayName: "Alice", Role: RoleAdmin, Version: 4}
	u, errs := ApplyUser(cur, UserInput{Role: ptr("viewer")})
	if errs != nil || u.Name != "alice" || u.DisplayName != "Alice" || u.Role != RoleViewer || u.ID != 3 || u.Version != 4 {
		t.Errorf("a change of the role alone: %+v, %v; want the rest kept", u, errs)
	}
	u, errs = ApplyUser(cur, UserInput{DisplayName: ptr("")})
	if errs != nil || u.DisplayName != "alice" {
		t.Errorf("a change to an empty display name: %+v, %v; want the name", u, errs)
	}
	if _, errs := ApplyUser(cur, UserInput{Password: ptr("short")}); !strings.HasPrefix(errs["password"], "must be at least") {
		t.Errorf("a change to a short password: %v", errs)
	}
}

// TestPasswordHashesCheckOnlyTheirPassword: a hash is argon2id in the
// PHC format with the documented parameters and a fresh salt; it checks
// its password and no other; a damaged or foreign hash matches nothing.
func TestPasswordHashesCheckOnlyTheirPassword(t *testing.T) {
	ctx := context.Background()
	pw := "correct horse battery"
	start := time.Now()
	h1, err := HashPassword(ctx, pw)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one argon2id hash (m=%d KiB, t=%d, p=%d) took %v", argonMemory, argonTime, argonThreads, took)
	if !strings.HasPrefix(h1, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("hash %q: want the PHC string of argon2id m=19456,t=2,p=1", h1)
	}
	h2, _ := HashPassword(ctx, pw)
	if h1 == h2 {
		t.Errorf("two hashes of one password are equal (%q): the salt is not fresh", h1)
	}
	for _, h := range []string{h1, h2} {
		if ok, err := VerifyPassword(ctx, h, pw); !ok || err != nil {
			t.Errorf("the right password against %q: %v, %v; want a match", h, ok, err)
		}
	}
	for _, wrong := range []string{"", "correct horse batter", "correct horse battery ", "Correct horse battery", strings.Repeat("x", 300)} {
		if ok, _ := VerifyPassword(ctx, h1, wrong); ok {
			t.Errorf("the wrong password %q matched", wrong)
		}
	}
	parts := strings.Split(h1, "$")
	damaged := []string{
		"", "plain", "$argon2i$v=19$m=19456,t=2,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=16$m=19456,t=2,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=4194304,t=2,p=1$" + parts[4] + "$" + parts[5], // 4 GiB: never run
		"$argon2id$v=19$m=19456,t=1000,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=19456,t=2,p=1$" + parts[4] + "$", "$argon2id$v=19$m=19456,t=2,p=1$$" + parts[5],
		"$argon2id$v=19$m=19456,t=2,p=1$" + parts[4] + "$" + parts[5] + "!",
	}
	for _, h := range damaged {
		if ok, err := VerifyPassword(ctx, h, pw); ok || err != nil {
			t.Errorf("the password against the damaged hash %q: %v, %v; want no match and no error", h, ok, err)
		}
	}
	// A hash of other parameters (an older setting) still checks.
	salt := []byte("0123456789abcdef")
	older := encodeHash(8*1024, 3, 1, salt, argon2.IDKey([]byte(pw), salt, 3, 8*1024, 1, 32))
	if ok, _ := VerifyPassword(ctx, older, pw); !ok {
		t.Errorf("a hash made with m=8192,t=3 does not check its password")
	}
}

// TestAnUnknownNameCostsWhatAWrongPasswordDoes: the check of a name that
// is not stored hashes as much as the check of a wrong password, so the
// time of a refusal does not say whether the name exists.
func TestAnUnknownNameCostsWhatAWrongPasswordDoes(t *testing.T) {
	ctx := context.Background()
	h, _ := HashPassword(ctx, "correct horse battery")
	measure := func(f func()) time.Duration {
		best := time.Hour
		for range 5 {
			start := time.Now()
			f()
			best = min(best, time.Since(start))
		}
		return best
	}
	wrong := measure(func() { _, _ = VerifyPassword(ctx, h, "not the password") })
	unknown := measure(func() { _ = DummyPasswordCheck(ctx, "not the password") })
	t.Logf("fastest of 5: a wrong password %v, an unknown name %v", wrong, unknown)
	if unknown < wrong/2 || unknown > wrong*2 {
		t.Errorf("an unknown name took %v, a wrong password %v: want about the same", unknown, wrong)
	}
}

// TestHashesWaitForASlotOrTheirDeadline: at most hashSlots hashes run at
// once; one that cannot get a slot before its context ends is refused as
// unavailable, not run.
func TestHashesWaitForASlotOrTheirDeadline(t *testing.T) {
	for range hashSlots {
		hashing <- struct{}{}
	}
	defer func() {
		for range hashSlots {
			<-hashing
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := HashPassword(ctx, "correct horse battery"); ErrorCode(err) != EUNAVAILABLE {
		t.Errorf("a hash with every slot taken: %v; want unavailable", err)
	}
}

// BenchmarkHashPassword measures one argon2id hash with the parameters
// passwords are stored with.
func BenchmarkHashPassword(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := HashPassword(ctx, "correct horse battery"); err != nil {
			b.Fatal(err)
		}
	}
}
