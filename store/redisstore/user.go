package redisstore

import (
	"context"

	"orders/store"
)

// Accounts, sessions and tokens are not stored yet: until they are, no
// account exists and the desk stays open (protected mode).

func notYet() error { return store.Errorf(store.EINVALID, "accounts are not available yet") }

func (s *Store) GetUser(ctx context.Context, id int64) (*store.User, error) {
	return nil, store.Errorf(store.ENOTFOUND, "user %d not found", id)
}
func (s *Store) UserByName(ctx context.Context, name string) (*store.User, error) {
	return nil, store.Errorf(store.ENOTFOUND, "no such user")
}
func (s *Store) ListUsers(ctx context.Context, q store.UserQuery) (store.UserPage, error) {
	return store.UserPage{Users: []store.User{}, Page: 1, PerPage: q.PerPage}, nil
}
func (s *Store) CreateUser(ctx context.Context, in store.UserInput) (*store.User, error) {
	return nil, notYet()
}
func (s *Store) UpdateUser(ctx context.Context, id int64, in store.UserInput, ifMatch int64, keep string) (*store.User, error) {
	return nil, notYet()
}
func (s *Store) DeleteUser(ctx context.Context, id int64, ifMatch, version int64) error {
	return notYet()
}
func (s *Store) UserHistory(ctx context.Context, id int64, cursor string, perPage int) (store.HistoryPage, error) {
	return store.HistoryPage{}, notYet()
}
func (s *Store) AddUserNote(ctx context.Context, id int64, note string) (*store.HistoryEntry, error) {
	return nil, notYet()
}
func (s *Store) HasUsers(ctx context.Context) (bool, error) { return false, nil }
func (s *Store) CheckPassword(ctx context.Context, name, password string) (*store.User, error) {
	return nil, store.Errorf(store.ENOTFOUND, "wrong name or password")
}
func (s *Store) EnsureAdmin(ctx context.Context, name, password string) (*store.User, error) {
	return nil, notYet()
}
func (s *Store) StartSession(ctx context.Context, id int64) (string, error) { return "", notYet() }
func (s *Store) SessionUser(ctx context.Context, secret string) (*store.User, error) {
	return nil, store.Errorf(store.ENOTFOUND, "no such session")
}
func (s *Store) EndSession(ctx context.Context, secret string) error { return nil }
func (s *Store) CreateToken(ctx context.Context, id int64, name string, role store.Role) (store.Token, string, error) {
	return store.Token{}, "", notYet()
}
func (s *Store) Tokens(ctx context.Context, id int64) ([]store.Token, error) {
	return []store.Token{}, nil
}
func (s *Store) RevokeToken(ctx context.Context, id, tokenID int64) error { return notYet() }
func (s *Store) TokenUser(ctx context.Context, secret string) (*store.User, *store.Token, error) {
	return nil, nil, store.Errorf(store.ENOTFOUND, "no such token")
}
