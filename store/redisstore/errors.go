package redisstore

import "orders/store"

// notFound is the error of an order id that names no order.
func notFound(id int64) *store.Error {
	return store.Errorf(store.ENOTFOUND, "order %d not found", id)
}

// unavailable is the error of a Redis that did not answer (in time).
func unavailable(err error) *store.Error {
	return &store.Error{Code: store.EUNAVAILABLE, Message: "the order store is not answering; try again shortly", Err: err}
}
