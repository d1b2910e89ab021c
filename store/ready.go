package store

import "context"

// Ready reports whether the store can serve requests: Redis answers (on a
// Cluster, every slot has a master that answers) and the Health function
// of Options, if any, reports no error.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.Ping(ctx); err != nil {
		return err
	}
	if s.health != nil {
		if err := s.health(); err != nil {
			return &Error{Code: EUNAVAILABLE, Message: err.Error(), Err: err}
		}
	}
	return nil
}
