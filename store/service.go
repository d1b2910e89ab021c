package store

import "context"

// ForgettingState is what an instance saw of Redis forgetting writes.
type ForgettingState struct {
	// Detected counts the times Redis was found behind what this instance
	// had seen (wiped, restored from a backup, or failed over with loss).
	Detected int64
	// Recovering is true from the detection until the indexes are repaired.
	Recovering bool
	// Unsafe is true while the id counters may still hand out an id in use.
	Unsafe bool
}

// Service is what the application asks of the store: each resource's
// records, the readiness of what holds them, their live event feeds and
// the limits counted beside them. The Redis adapter (store/redisstore)
// implements it.
type Service interface {
	Orders
	Products
	Customers
	// Ready reports whether the store answers (what /readyz says).
	Ready(ctx context.Context) error
	// Feed returns the event feed of a resource (OrderEvents, …); nil
	// for an unknown name.
	Feed(name string) Feed
	// Forgetting reports what this instance saw of the store forgetting
	// writes.
	Forgetting() ForgettingState
	// Limits returns the limits on sign-ins and live streams, counted in
	// the store.
	Limits(opt LimitOptions) Limiter
}

// Orders are the orders' records.
type Orders interface {
	GetOrder(ctx context.Context, id int64) (*Order, error)
	ListOrders(ctx context.Context, q OrderQuery) (OrderPage, error)
	CreateOrder(ctx context.Context, in OrderInput) (*Order, error)
	// CreateOrderOnce is CreateOrder for a request that carries an
	// Idempotency-Key: a retry with the same key and fingerprint gets the
	// same order.
	CreateOrderOnce(ctx context.Context, key, fingerprint string, in OrderInput) (*Order, error)
	UpdateOrder(ctx context.Context, id int64, in OrderInput, ifMatch int64) (*Order, error)
	DeleteOrder(ctx context.Context, id int64, ifMatch, version int64) error
	OrderHistory(ctx context.Context, id int64, cursor string, perPage int) (HistoryPage, error)
	AddOrderNote(ctx context.Context, id int64, note string) (*HistoryEntry, error)
	CountOrders(ctx context.Context) (int64, error)
}

// Products are the catalogue's records.
type Products interface {
	GetProduct(ctx context.Context, id int64) (*Product, error)
	ListProducts(ctx context.Context, q ProductQuery) (ProductPage, error)
	CreateProduct(ctx context.Context, in ProductInput) (*Product, error)
	UpdateProduct(ctx context.Context, id int64, in ProductInput, ifMatch int64) (*Product, error)
	DeleteProduct(ctx context.Context, id int64, ifMatch, version int64) error
	ProductHistory(ctx context.Context, id int64, cursor string, perPage int) (HistoryPage, error)
	AddProductNote(ctx context.Context, id int64, note string) (*HistoryEntry, error)
}

// Customers are the customers' records.
type Customers interface {
	GetCustomer(ctx context.Context, id int64) (*Customer, error)
	ListCustomers(ctx context.Context, q CustomerQuery) (CustomerPage, error)
	// CustomerOrders is one page of a customer's orders, newest first.
	CustomerOrders(ctx context.Context, id int64, page, perPage int) (OrderPage, error)
	CreateCustomer(ctx context.Context, in CustomerInput) (*Customer, error)
	UpdateCustomer(ctx context.Context, id int64, in CustomerInput, ifMatch int64) (*Customer, error)
	DeleteCustomer(ctx context.Context, id int64, ifMatch, version int64) error
	CustomerHistory(ctx context.Context, id int64, cursor string, perPage int) (HistoryPage, error)
	AddCustomerNote(ctx context.Context, id int64, note string) (*HistoryEntry, error)
}
