package redisstore

import "orders/store"

func notFound(id int64) *store.Error {
	return store.Errorf(store.ENOTFOUND, "order %d not found", id)
}

func unavailable(err error) *store.Error {
	return &store.Error{Code: store.EUNAVAILABLE, Message: "the order store is not answering; try again shortly", Err: err}
}
