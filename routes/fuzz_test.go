package routes

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"orders/store"
)

// checkInput holds for every decoded request: item indexes in range, and
// validation never panics.
func checkInput(t *testing.T, in orderIn) {
	t.Helper()
	if len(in.rowN) != len(in.Items) {
		t.Fatalf("%d items but %d row numbers", len(in.Items), len(in.rowN))
	}
	for _, n := range in.rowN {
		if n < 0 || n > maxRowIndex {
			t.Fatalf("item index %d out of range", n)
		}
	}
	// Every message the store gives comes back under a row number sent.
	err := in.requestErrors(&store.Error{Code: store.EINVALID, Fields: store.Validate(nil, in.OrderInput)})
	for k := range err.(*store.Error).Fields {
		if strings.HasPrefix(k, "items[") && k != "items" {
			var n int
			var rest string
			if _, e := fmt.Sscanf(k, "items[%d]%s", &n, &rest); e != nil || !slices.Contains(in.rowN, n) {
				t.Fatalf("message key %q names no row the request sent (%v)", k, in.rowN)
			}
		}
	}
}

// FuzzDecodeForm: any urlencoded body decodes to an error or to an input
// whose items are in N order, within the index limit; never a panic.
func FuzzDecodeForm(f *testing.F) {
	for _, s := range []string{
		"customer=Ada&items[0][name]=Mug&items[0][quantity]=3&items[0][unit_price]=0.10",
		"items[5][name]=b&items[0][name]=a", "items=", "items[99999][name]=x", "items[0][bogus]=1",
		"version=abc", "version=3&version=4", "items[-1][name]=x", "items[0]name]=x", "%zz=1", "customer=%00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		vals, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		var kv [][2]string
		for k, vs := range vals {
			for _, v := range vs {
				kv = append(kv, [2]string{k, v})
			}
		}
		in, err := decodeForm(kv)
		if err != nil {
			return
		}
		for i := 1; i < len(in.rowN); i++ {
			if in.rowN[i] <= in.rowN[i-1] {
				t.Fatalf("items out of N order: %d then %d", in.rowN[i-1], in.rowN[i])
			}
		}
		checkInput(t, in)
	})
}

// FuzzDecodeJSON: any body decodes to a 400-class error or to an input the
// store can validate; never a panic.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"customer":"Ada","items":[{"name":"Mug","quantity":3,"unit_price":"0.10"}]}`,
		`{"customer":5}`, `[]`, `{"items":{}}`, `{"items":[{"quantity":"3","unit_price":1.5}]}`,
		`{"version":-1}`, `{"customer":"a"} {"customer":"b"}`, `{"items":[[[[[[]]]]]]}`, `{"notes":"\u0000"}`,
		`{"items":[{"unit_price":1e400}]}`, "{\"customer\":\"\xff\"}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		in, err := decodeJSON([]byte(body))
		if err != nil {
			return
		}
		checkInput(t, in)
	})
}
