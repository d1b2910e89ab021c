package embedded

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"orders/store"
	"orders/store/redisstore"
)

// TestAccountsAndSessionsOutliveARestart: on the embedded store, an
// account, its sessions and tokens, and a password change that ended all
// but one session are what a restart (a kill: no last snapshot) brings
// back.
func TestAccountsAndSessionsOutliveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orders.json")
	ctx := context.Background()
	e, err := Open(Options{Path: path}, &redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := redisstore.New(e.Client(), redisstore.Options{})
	u, err := s.CreateUser(ctx, store.UserInput{Name: ptr("root"), Role: ptr("admin"), Password: ptr("correct horse battery")})
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := s.StartSession(ctx, u.ID)
	ended, _ := s.StartSession(ctx, u.ID)
	_, tok, err := s.CreateToken(ctx, u.ID, "ci", store.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateUser(ctx, u.ID, store.UserInput{Password: ptr("another good password")}, 0, kept); err != nil {
		t.Fatal(err)
	}
	crash(e)

	if e, err = Open(Options{Path: path}, &redis.Options{}); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s = redisstore.New(e.Client(), redisstore.Options{})
	if has, err := s.HasUsers(ctx); !has || err != nil {
		t.Fatalf("HasUsers after the restart: %v, %v", has, err)
	}
	if _, err := s.CheckPassword(ctx, "root", "another good password"); err != nil {
		t.Errorf("the new password after the restart: %v", err)
	}
	if _, err := s.SessionUser(ctx, kept); err != nil {
		t.Errorf("the kept session after the restart: %v", err)
	}
	if _, err := s.SessionUser(ctx, ended); store.ErrorCode(err) != store.ENOTFOUND {
		t.Errorf("the ended session after the restart: %v; want not found", err)
	}
	if _, _, err := s.TokenUser(ctx, tok); err != nil {
		t.Errorf("the token after the restart: %v", err)
	}
}
