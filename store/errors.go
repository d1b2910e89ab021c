package store

import (
	"errors"
	"fmt"
)

// Error codes: every error the application reports to a person or a program
// carries one of these, and the HTTP layer maps each to one status code.
const (
	ENOTFOUND     = "not_found"    // no such order
	EINVALID      = "invalid"      // values that break a rule; Fields says which
	ECONFLICT     = "conflict"     // a stale version in the body
	EPRECONDITION = "precondition" // an If-Match that does not match
	EUNAVAILABLE  = "unavailable"  // Redis did not answer in time
	EUNSIGNED     = "unsigned"     // no one is signed in (no session or token)
	EFORBIDDEN    = "forbidden"    // the person's role does not allow it
	EGONE         = "gone"         // deleted too long ago to be brought back
	EBROAD        = "too_broad"    // a query that would cost more than its bound; the message says what to narrow
	EINTERNAL     = "internal"     // anything unexpected
)

// Error is the application's one error type.
type Error struct {
	Code    string
	Message string
	// Fields maps a field name ("customer", "items[2][quantity]") to a message.
	Fields map[string]string
	// Current is the stored record (an *Order, or another resource's),
	// set with ECONFLICT and EPRECONDITION, and with EINVALID for a change
	// to a stored record.
	Current any
	// Err is the underlying cause, never shown to a client.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// CurrentOrder is Current when it is an order, else nil.
func (e *Error) CurrentOrder() *Order {
	o, _ := e.Current.(*Order)
	return o
}

// ErrorCode returns the code of an *Error anywhere in err's chain, or EINTERNAL.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// Errorf returns an *Error with the given code and message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
