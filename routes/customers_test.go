package routes

// What only customers promise: an email unique case aside, the address as
// a JSON object (address.city in forms and errors), the List's query.
// What every resource promises runs over customers too: they join the
// shared suites (resources_test.go) through the resource's Example; its
// history session is scripted here.

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"orders/store"
	"orders/store/redisstore"
	"orders/testutil"
)

func init() {
	noteAdders["customers"] = (*redisstore.Store).AddCustomerNote
	sessions["customers"] = []sessionStep{
		{"create", http.MethodPost, map[string]any{"name": "Ada", "email": "ada@example.com", "address": map[string]any{"city": "London"}},
			&wantEntry{action: "created", version: 1,
				changes: map[string][2]any{"name": {nil, "Ada"}, "email": {nil, "ada@example.com"}, "address.city": {nil, "London"}}}},
		{"a field", http.MethodPut, map[string]any{"name": "Ada Lovelace", "version": 1},
			&wantEntry{action: "updated", version: 2, changes: map[string][2]any{"name": {"Ada", "Ada Lovelace"}}}},
		{"the address", http.MethodPut, map[string]any{"address": map[string]any{"city": "Cambridge", "country": "gb"}, "version": 2},
			&wantEntry{action: "updated", version: 3, changes: map[string][2]any{"address.city": {"London", "Cambridge"}, "address.country": {"", "GB"}}}},
		{"nothing", http.MethodPut, map[string]any{"name": "Ada Lovelace", "address": map[string]any{"country": "GB"}, "version": 3}, nil},
		{"note", http.MethodPost, map[string]any{"note": "Met at the exhibition."},
			&wantEntry{action: "note", version: 3, note: "Met at the exhibition."}},
		{"delete", http.MethodDelete, nil, &wantEntry{action: "deleted", version: 3}},
	}
	sessionPages["customers"] = []string{"Deleted by anonymous through the API · version 3", "Met at the exhibition.",
		"City: London → Cambridge", "Name: Ada → Ada Lovelace",
		"Created by anonymous through the API · version 1", "Name: Ada Email: ada@example.com City: London"}
}

// customerJSON is the JSON of one customer.
type customerJSON struct {
	ID        int64         `json:"id"`
	Name      string        `json:"name"`
	Email     string        `json:"email"`
	Phone     string        `json:"phone"`
	Company   string        `json:"company"`
	Address   store.Address `json:"address"`
	Notes     string        `json:"notes"`
	Version   int64         `json:"version"`
	CreatedAt string        `json:"created_at"`
	UpdatedAt string        `json:"updated_at"`
}

// customerCount is the number of customers stored.
func (a *testApp) customerCount(t testing.TB) int64 {
	t.Helper()
	p, err := a.store.ListCustomers(t.Context(), store.CustomerQuery{PerPage: 1})
	if err != nil {
		t.Fatalf("counting customers: %v", err)
	}
	return p.Total
}

// createCustomer makes a customer through POST /customers (JSON).
func (a *testApp) createCustomer(t testing.TB, v map[string]any) customerJSON {
	t.Helper()
	var c customerJSON
	a.do(t, http.MethodPost, "/customers", testutil.JSON(v), testutil.HJSON).WantStatus(t, http.StatusCreated).JSON(t, &c)
	return c
}

// TestCustomerCreate: the fields as stored and shown, the address as a
// JSON object and as address.* form keys.
func TestCustomerCreate(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		c := a.createCustomer(t, map[string]any{"name": " Ada Lovelace ", "email": "ada@example.com", "phone": "+44 20 7946 0000",
			"company": "Analytical Engines", "address": map[string]any{"line1": "12 St James's Square", "city": "London",
				"postal_code": "SW1Y 4JH", "country": "gb"}, "notes": "Prefers email"})
		want := store.Address{Line1: "12 St James's Square", City: "London", PostalCode: "SW1Y 4JH", Country: "GB"}
		if c.Name != "Ada Lovelace" || c.Address != want || c.Version != 1 {
			t.Errorf("created %+v, want the address %+v", c, want)
		}
		a.get(t, customerResource.MemberPath(c.ID), testutil.HPage).WantStatus(t, http.StatusOK).WantPage(t, "customer").
			WantContains(t, "Ada Lovelace", "SW1Y 4JH", "mailto:ada@example.com", "<title>Customer "+itoa(c.ID)+" · Ada Lovelace · Orders</title>")
		r := a.do(t, http.MethodPost, "/customers", testutil.Form("name", "Grace Hopper", "address.city", "Arlington", "address.country", "us"), testutil.HPage)
		r.WantStatus(t, http.StatusSeeOther)
		var g customerJSON
		a.get(t, r.Header.Get("Location"), testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &g)
		if g.Name != "Grace Hopper" || g.Address.City != "Arlington" || g.Address.Country != "US" {
			t.Errorf("a form's address: %+v", g)
		}
		// A change to one address field keeps the others.
		var u customerJSON
		a.do(t, http.MethodPut, customerResource.MemberPath(c.ID), testutil.JSON(map[string]any{"address": map[string]any{"city": "Cambridge"}}),
			testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &u)
		if u.Address.City != "Cambridge" || u.Address.Line1 != want.Line1 || u.Version != 2 {
			t.Errorf("after changing the city: %+v", u)
		}
	})
}

// TestCustomerValidation: the checks over JSON (errors.address.country)
// and a form (the message beside the field); a taken email, case aside,
// is a 422 naming its holder; wrong JSON types are a 400.
func TestCustomerValidation(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		held := a.createCustomer(t, map[string]any{"name": "Held", "email": "held@example.com"})
		for _, c := range []struct {
			body  map[string]any
			field string
			msg   string
		}{
			{map[string]any{"email": "x@example.com"}, "name", "is required"},
			{map[string]any{"name": "A", "email": "not an email"}, "email", "must be one email address"},
			{map[string]any{"name": "A", "phone": "call me"}, "phone", "must be digits"},
			{map[string]any{"name": "A", "address": map[string]any{"country": "Germany"}}, "address.country", "ISO 3166-1"},
			{map[string]any{"name": "A", "email": "HELD@example.com"}, "email", "is already the email of customer " + itoa(held.ID)},
		} {
			r := a.do(t, http.MethodPost, "/customers", testutil.JSON(c.body), testutil.HJSON).WantStatus(t, http.StatusUnprocessableEntity)
			errs, _ := r.Object(t)["errors"].(map[string]any)
			if msg, _ := errs[c.field].(string); !strings.Contains(msg, c.msg) {
				t.Errorf("%s: errors %v, want %s: …%s…", r.What, errs, c.field, c.msg)
			}
		}
		a.do(t, http.MethodPost, "/customers", testutil.Form("name", "A", "address.country", "XX"), testutil.HPage).
			WantStatus(t, http.StatusUnprocessableEntity).WantFieldError(t, "address.country", "Country (ISO code, like DE) must be", "XX")
		for _, body := range []string{`{"name":"A","address":"Berlin"}`, `{"name":"A","address":{"city":7}}`, `{"name":7}`} {
			a.do(t, http.MethodPost, "/customers", testutil.Raw("application/json", body), testutil.HJSON).WantStatus(t, http.StatusBadRequest)
		}
		if n := a.customerCount(t); n != 1 {
			t.Errorf("%d customers stored, want the one held", n)
		}
		// The email is free again once its holder changes it.
		a.do(t, http.MethodPut, customerResource.MemberPath(held.ID), testutil.JSON(map[string]any{"email": ""}), testutil.HJSON).
			WantStatus(t, http.StatusOK)
		a.createCustomer(t, map[string]any{"name": "B", "email": "Held@Example.com"})
	})
}

// TestCustomerListQuery: q matches the id, the start of any word of the
// name or the company, the start of the email and the phone's digits;
// the sorts; a sort it does not know is a 400.
func TestCustomerListQuery(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		ada := a.createCustomer(t, map[string]any{"name": "Ada Lovelace", "company": "Analytical Engines", "email": "ada@example.com", "phone": "+44 (20) 7946-0001"})
		grace := a.createCustomer(t, map[string]any{"name": "Grace Hopper", "company": "Navy", "email": "grace@navy.example", "phone": "555 0100"})
		zed := a.createCustomer(t, map[string]any{"name": "Zed Ada", "email": "zed@example.com"})
		ids := func(query string) []int64 {
			var l struct {
				Customers []customerJSON `json:"customers"`
			}
			a.get(t, "/customers?"+query, testutil.HJSON).WantStatus(t, http.StatusOK).WantNegotiated(t).JSON(t, &l)
			out := []int64{}
			for _, c := range l.Customers {
				out = append(out, c.ID)
			}
			return out
		}
		for _, c := range []struct {
			query string
			want  []int64
		}{
			{"", []int64{ada.ID, grace.ID, zed.ID}},
			{"sort=-name", []int64{zed.ID, grace.ID, ada.ID}},
			{"sort=-created", []int64{zed.ID, grace.ID, ada.ID}},
			{"sort=created", []int64{ada.ID, grace.ID, zed.ID}},
			{"q=lovel", []int64{ada.ID}},
			{"q=analyt", []int64{ada.ID}},
			{"q=grace@navy", []int64{grace.ID}},
			{"q=4420794", []int64{ada.ID}},
			{"q=5550100", []int64{grace.ID}},
			{"q=" + itoa(zed.ID), []int64{zed.ID}},
			{"q=ada", []int64{ada.ID, zed.ID}},
			{"q=ada+lov", []int64{ada.ID}},
			{"q=nobody", []int64{}},
		} {
			got := ids(c.query)
			if c.query == "q=ada" {
				slices.Sort(got)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("/customers?%s: %v, want %v", c.query, got, c.want)
			}
		}
		a.get(t, "/customers?sort=sku", testutil.HJSON).WantStatus(t, http.StatusBadRequest)
		// By last order: the customers with orders, newest order first,
		// then the others by id.
		if got := ids("sort=-last_order"); !slices.Equal(got, []int64{ada.ID, grace.ID, zed.ID}) {
			t.Errorf("/customers?sort=-last_order without orders: %v, want %v", got, []int64{ada.ID, grace.ID, zed.ID})
		}
		a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Zed Ada", "customer_id": zed.ID}), testutil.HJSON).
			WantStatus(t, http.StatusCreated)
		if got := ids("sort=-last_order"); !slices.Equal(got, []int64{zed.ID, ada.ID, grace.ID}) {
			t.Errorf("/customers?sort=-last_order after an order for Zed: %v, want %v", got, []int64{zed.ID, ada.ID, grace.ID})
		}
		a.get(t, "/customers?sort=-last_order", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "by last order, newest first")
		a.get(t, "/customers?q=lovelace", testutil.HPage).WantStatus(t, http.StatusOK).WantContains(t, "Ada Lovelace").WantLacks(t, "Grace Hopper")
	})
}

// TestOrdersLinkToCustomers: an order's customer_id (JSON and form) names
// a stored customer or is a 422; the order page links its customer; the
// customer's page lists its orders, newest first, with the count and the
// totals; a customer with orders is not deleted (409 saying how many);
// the order form's customer picker gets customers as options.
func TestOrdersLinkToCustomers(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		ada := a.createCustomer(t, map[string]any{"name": "Ada Lovelace", "email": "ada@example.com"})
		cid := itoa(ada.ID)
		var o struct {
			ID         int64  `json:"id"`
			CustomerID *int64 `json:"customer_id"`
		}
		a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Ada Lovelace", "customer_id": ada.ID,
			"items": []any{item("Widget", 2, "1.50")}}), testutil.HJSON).WantStatus(t, http.StatusCreated).JSON(t, &o)
		if o.CustomerID == nil || *o.CustomerID != ada.ID {
			t.Errorf("created an order with customer_id %v, want %d", o.CustomerID, ada.ID)
		}
		r := a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Ada L.", "customer_id", cid,
			"items[0][name]", "Gear", "items[0][quantity]", "1", "items[0][unit_price]", "9.99"), testutil.HPage).WantStatus(t, http.StatusSeeOther)
		second := r.Header.Get("Location")
		r = a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "X", "customer_id": 999}), testutil.HJSON).
			WantStatus(t, http.StatusUnprocessableEntity)
		if errs, _ := r.Object(t)["errors"].(map[string]any); !strings.Contains(fmt.Sprint(errs["customer_id"]), "no customer 999") {
			t.Errorf("%s: errors %v, want customer_id naming no customer", r.What, errs)
		}
		// The List's entries say which customer each order is for.
		var list struct {
			Orders []struct {
				ID         int64 `json:"id"`
				CustomerID int64 `json:"customer_id"`
			} `json:"orders"`
		}
		a.get(t, "/orders", testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &list)
		if i := slices.IndexFunc(list.Orders, func(e struct {
			ID         int64 `json:"id"`
			CustomerID int64 `json:"customer_id"`
		}) bool {
			return e.ID == o.ID
		}); i < 0 || list.Orders[i].CustomerID != ada.ID {
			t.Errorf("GET /orders: entries %+v, want order %d for customer %d", list.Orders, o.ID, ada.ID)
		}
		a.get(t, second, testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, `<a href="`+customerResource.MemberPath(ada.ID)+`">Ada L.</a>`)
		// The edit form keeps the link; free text without it unlinks.
		a.get(t, orderResource.EditPath(o.ID), testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, `name="customer_id" value="`+cid+`"`)
		a.get(t, customerResource.MemberPath(ada.ID), testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, "2 orders, the last on", "Lifetime totals (cancelled orders aside): 12.99 USD", "Order "+itoa(o.ID))
		var c struct {
			OrderCount  int64               `json:"order_count"`
			LastOrderAt *string             `json:"last_order_at"`
			Totals      []map[string]string `json:"totals"`
		}
		a.get(t, customerResource.MemberPath(ada.ID), testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &c)
		if c.OrderCount != 2 || c.LastOrderAt == nil || len(c.Totals) != 1 || c.Totals[0]["total"] != "12.99" {
			t.Errorf("the customer's JSON: %+v", c)
		}
		r = a.do(t, http.MethodDelete, customerResource.MemberPath(ada.ID), testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusConflict)
		if msg, _ := r.Object(t)["error"].(string); !strings.Contains(msg, "has 2 orders") {
			t.Errorf("%s: %q, want it to say 2 orders", r.What, msg)
		}
		a.do(t, http.MethodPut, orderResource.MemberPath(o.ID), testutil.JSON(map[string]any{"customer_id": ""}), testutil.HJSON).
			WantStatus(t, http.StatusOK)
		a.get(t, customerResource.MemberPath(ada.ID), testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &c)
		if c.OrderCount != 1 {
			t.Errorf("after unlinking an order: %d orders, want 1", c.OrderCount)
		}
		a.get(t, "/customers?q=lovel&per_page=10&picker=1", testutil.HHX).WantStatus(t, http.StatusOK).
			WantContains(t, `role="option"`, `data-id="`+cid+`"`, `data-email="ada@example.com"`)
		a.get(t, orderResource.NewPath(), testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, `data-product-picker="/customers" data-picker-noun="customer" data-picker-nouns="customers"`,
				`data-product-picker="/products" data-picker-noun="product" data-picker-nouns="products"`, `data-product-field="id" data-picker-link`)
	})
}

// TestCustomerListShowsOrderCounts: each row of the customer List says how
// many orders link the customer, cancelled ones included, and so does the
// row and the JSON an edit answers.
func TestCustomerListShowsOrderCounts(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		ada := a.createCustomer(t, map[string]any{"name": "Ada Lovelace"})
		var o struct {
			ID int64 `json:"id"`
		}
		for range 2 {
			a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Ada Lovelace", "customer_id": ada.ID,
				"items": []any{item("Widget", 1, "2.00")}}), testutil.HJSON).WantStatus(t, http.StatusCreated).JSON(t, &o)
		}
		a.do(t, http.MethodPut, orderResource.MemberPath(o.ID), testutil.JSON(map[string]any{"status": "cancelled"}), testutil.HJSON).
			WantStatus(t, http.StatusOK)
		cell := `<td class="num" data-label="Orders">2</td>`
		a.get(t, customerResource.Path(), testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, `<th scope="col" class="num">Orders</th>`, cell)
		a.do(t, http.MethodPut, customerResource.MemberPath(ada.ID), testutil.Form("name", "Ada King", "version", "1"),
			testutil.HXTo("tr#"+customerResource.RowID(ada.ID))).WantStatus(t, http.StatusOK).WantContains(t, "Ada King", cell)
		var c struct {
			OrderCount int64 `json:"order_count"`
		}
		a.do(t, http.MethodPut, customerResource.MemberPath(ada.ID), testutil.JSON(map[string]any{"notes": "Countess"}), testutil.HJSON).
			WantStatus(t, http.StatusOK).JSON(t, &c)
		if c.OrderCount != 2 {
			t.Errorf("PUT %s: order_count %d, want 2", customerResource.MemberPath(ada.ID), c.OrderCount)
		}
	})
}

// TestCustomerWithOrdersDeleteSaysHowMany: a delete of a customer whose
// orders link it is refused with a 409 that says how many orders, from
// the API, the customer's page (a form and htmx) and its List row alike;
// the customer stays.
func TestCustomerWithOrdersDeleteSaysHowMany(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		ada := a.createCustomer(t, map[string]any{"name": "Ada Lovelace"})
		for range 3 {
			a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Ada Lovelace", "customer_id": ada.ID,
				"items": []any{item("Widget", 1, "2.00")}}), testutil.HJSON).WantStatus(t, http.StatusCreated)
		}
		member := customerResource.MemberPath(ada.ID)
		const says = "has 3 orders; a customer with orders cannot be deleted"
		r := a.do(t, http.MethodDelete, member+"?version=1", testutil.NoBody, testutil.HJSON).WantStatus(t, http.StatusConflict)
		if msg, _ := r.Object(t)["error"].(string); !strings.Contains(msg, says) {
			t.Errorf("%s: error %q, want it to say %q", r.What, msg, says)
		}
		a.do(t, http.MethodPost, member, testutil.Form("_method", "DELETE", "version", "1"), testutil.HPage).
			WantStatus(t, http.StatusConflict).WantContains(t, says)
		a.do(t, http.MethodDelete, member+"?confirm=delete&version=1", testutil.NoBody, testutil.HXTo("main#main")).
			WantStatus(t, http.StatusConflict).WantContains(t, says)
		a.do(t, http.MethodDelete, member+"?version=1", testutil.NoBody, testutil.HXTo("tr#"+customerResource.RowID(ada.ID))).
			WantStatus(t, http.StatusConflict).WantContains(t, says)
		// If-Match of the current version: the orders refuse it; of
		// another version: the precondition fails first.
		etag := func(v int) testutil.H {
			return testutil.HJSON.With(testutil.H{"If-Match": fmt.Sprintf(`"c%dv%d-json"`, ada.ID, v)})
		}
		a.do(t, http.MethodDelete, member, testutil.NoBody, etag(1)).WantStatus(t, http.StatusConflict).WantContains(t, says)
		a.do(t, http.MethodDelete, member, testutil.NoBody, etag(2)).WantStatus(t, http.StatusPreconditionFailed)
		var c customerJSON
		a.get(t, member, testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &c)
		if c.Version != 1 || c.Name != "Ada Lovelace" {
			t.Errorf("after the refused deletes: %+v, want Ada Lovelace at version 1", c)
		}
	})
}

// TestOrderFormShowsARefusedCustomerLink: the customer link of the order
// form is a hidden input, so a link the store refuses (a customer number
// that names no customer, say one deleted while the form was open) is
// shown under the customer's name, which is marked invalid.
func TestOrderFormShowsARefusedCustomerLink(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		const shown = `<small id="customer-err" class="error-text">Customer number names no customer: there is no customer 999</small>`
		a.do(t, http.MethodPost, "/orders", testutil.Form("customer", "Ada", "customer_id", "999",
			"items[0][name]", "Gear", "items[0][quantity]", "1", "items[0][unit_price]", "9.99"), testutil.HPage).
			WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, shown, `aria-invalid="true" aria-describedby="customer-err"`)
		var o struct {
			ID int64 `json:"id"`
		}
		a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Ada", "items": []any{item("Gear", 1, "9.99")}}), testutil.HJSON).
			WantStatus(t, http.StatusCreated).JSON(t, &o)
		a.do(t, http.MethodPut, orderResource.MemberPath(o.ID), testutil.Form("customer", "Ada", "customer_id", "abc", "version", "1"),
			testutil.HXTo("main#main")).WantStatus(t, http.StatusUnprocessableEntity).
			WantContains(t, `<small id="customer-err" class="error-text">Customer number must be a customer&#39;s number</small>`)
		// The customer's own message comes first.
		a.do(t, http.MethodPost, "/orders", testutil.Form("customer", " ", "customer_id", "999"), testutil.HPage).
			WantStatus(t, http.StatusUnprocessableEntity).WantContains(t, `<small id="customer-err" class="error-text">Customer is required</small>`)
	})
}

// TestCustomerPageShowsItsOrdersAPageAtATime: the customer's page lists
// its orders newest first, ten at a time; orders_page names the page, in
// the page, its fragment and its JSON alike, with links to the pages
// around it and the total. A value that is not a page number is a 400.
func TestCustomerPageShowsItsOrdersAPageAtATime(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		ada := a.createCustomer(t, map[string]any{"name": "Ada Lovelace"})
		var ids []int64 // newest first
		for range 25 {
			var o struct {
				ID int64 `json:"id"`
			}
			a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Ada Lovelace", "customer_id": ada.ID,
				"items": []any{item("Widget", 1, "2.00")}}), testutil.HJSON).WantStatus(t, http.StatusCreated).JSON(t, &o)
			ids = append([]int64{o.ID}, ids...)
		}
		member := customerResource.MemberPath(ada.ID)
		var c struct {
			Orders struct {
				Orders []struct {
					ID int64 `json:"id"`
				} `json:"orders"`
				Page    int     `json:"page"`
				PerPage int     `json:"per_page"`
				Total   int64   `json:"total"`
				Prev    *string `json:"prev"`
				Next    *string `json:"next"`
			} `json:"orders"`
		}
		a.get(t, member+"?orders_page=2", testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &c)
		p := c.Orders
		var got []int64
		for _, o := range p.Orders {
			got = append(got, o.ID)
		}
		if !slices.Equal(got, ids[10:20]) || p.Page != 2 || p.PerPage != 10 || p.Total != 25 ||
			p.Prev == nil || *p.Prev != member || p.Next == nil || *p.Next != member+"?orders_page=3" {
			t.Errorf("GET %s?orders_page=2: orders %v page %d of %d per %d, prev %v next %v; want orders %v, page 2 of 25 per 10, prev %s, next %s?orders_page=3",
				member, got, p.Page, p.Total, p.PerPage, p.Prev, p.Next, ids[10:20], member, member)
		}
		for _, h := range []testutil.H{testutil.HPage, testutil.HHX} {
			a.get(t, member+"?orders_page=2", h).WantStatus(t, http.StatusOK).
				WantContains(t, `rel="prev" href="`+member+`"`, `rel="next" href="`+member+`?orders_page=3"`,
					`hx-select="#customer-orders"`, "25 orders in all", ">Order "+itoa(ids[10])+"<", ">Order "+itoa(ids[19])+"<").
				WantLacks(t, ">Order "+itoa(ids[9])+"<", ">Order "+itoa(ids[20])+"<")
		}
		a.get(t, member+"?orders_page=3", testutil.HJSON).WantStatus(t, http.StatusOK).JSON(t, &c)
		if len(c.Orders.Orders) != 5 || c.Orders.Next != nil || c.Orders.Prev == nil || *c.Orders.Prev != member+"?orders_page=2" {
			t.Errorf("GET %s?orders_page=3: %d orders, prev %v, next %v; want the 5 oldest, prev page 2, no next",
				member, len(c.Orders.Orders), c.Orders.Prev, c.Orders.Next)
		}
		a.get(t, member, testutil.HPage).WantStatus(t, http.StatusOK).
			WantContains(t, ">Order "+itoa(ids[0])+"<", `rel="next" href="`+member+`?orders_page=2"`).WantLacks(t, `rel="prev"`)
		for _, bad := range []string{"x", "0", "-1", "1.5"} {
			r := a.get(t, member+"?orders_page="+bad, testutil.HJSON).WantStatus(t, http.StatusBadRequest)
			if msg, _ := r.Object(t)["error"].(string); !strings.Contains(msg, "orders_page must be a whole number") {
				t.Errorf("%s: error %q, want it to say orders_page must be a whole number", r.What, msg)
			}
			a.get(t, member+"?orders_page="+bad, testutil.HPage).WantStatus(t, http.StatusBadRequest).
				WantContains(t, "“orders_page” must be a whole number")
		}
	})
}

// A customer's representations show its orders, which change without the
// customer's version: a browser or a program revalidating with the ETag
// it holds gets the new figures, not a 304, once an order links it,
// changes or leaves it, in every representation (a List row included).
func TestCustomerETagsFollowItsOrders(t *testing.T) {
	eachTarget(t, func(t *testing.T, a *testApp) {
		ada := a.createCustomer(t, map[string]any{"name": "Ada Lovelace"})
		member := customerResource.MemberPath(ada.ID)
		targets := map[string]testutil.H{"page": testutil.HPage, "fragment": testutil.HHX, "JSON": testutil.HJSON,
			"List row": testutil.HHX.With(testutil.H{"HX-Target": customerResource.RowID(ada.ID)})}
		held := map[string]string{}
		hold := func(what string) {
			t.Helper()
			for name, h := range targets {
				r := a.get(t, member, h).WantStatus(t, http.StatusOK)
				tag := r.Header.Get("ETag")
				if tag == "" {
					t.Fatalf("%s, the %s: no ETag", what, name)
				}
				a.get(t, member, h.With(testutil.H{"If-None-Match": tag})).WantStatus(t, http.StatusNotModified)
				held[name] = tag
			}
		}
		wantChanged := func(what string) {
			t.Helper()
			for name, h := range targets {
				r := a.get(t, member, h.With(testutil.H{"If-None-Match": held[name]}))
				if r.Status != http.StatusOK || r.Header.Get("ETag") == held[name] {
					t.Errorf("after %s, the %s with the ETag held before (%s): %d, ETag %s; want 200 and a new ETag",
						what, name, held[name], r.Status, r.Header.Get("ETag"))
				}
			}
		}
		hold("before any order")
		var o orderJSON
		a.do(t, http.MethodPost, "/orders", testutil.JSON(map[string]any{"customer": "Ada Lovelace", "customer_id": ada.ID,
			"items": []any{item("Widget", 1, "2.00")}}), testutil.HJSON).WantStatus(t, http.StatusCreated).JSON(t, &o)
		wantChanged("an order linked it")
		hold("with one order")
		a.update(t, o.ID, map[string]any{"items": []any{item("Widget", 3, "2.00")}, "version": o.Version})
		wantChanged("its order's total changed")
		hold("with the order changed")
		a.update(t, o.ID, map[string]any{"customer_id": "", "version": o.Version + 1})
		wantChanged("its order left it")
		if got := a.get(t, member, testutil.HJSON).Header.Get("ETag"); !strings.Contains(got, "v1-") {
			t.Errorf("customer ETag %s: the customer's version is still 1", got)
		}
	})
}
