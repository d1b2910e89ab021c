package e2e

// Customers under a chaos load, beside the orders that link them: the
// customer writers create, rename, change emails (from a small pool, so
// that writers collide on them) and addresses, send stale versions and
// race DELETEs against PUTs, while order writers link orders to the
// customers and unlink them. Afterwards, over HTTP, every customer that
// exists is in every List once and as it is, no two share an email, every
// acknowledged write is there, and the links hold: no order names a
// customer that does not exist, each customer counts the orders that
// name it, and a customer with orders is not deleted (409 saying how
// many).

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"orders/store"
	"orders/testutil"
)

// customerJSON is a customer as its JSON representation shows it.
type customerJSON struct {
	ID         int64         `json:"id"`
	Name       string        `json:"name"`
	Email      string        `json:"email"`
	Phone      string        `json:"phone"`
	Company    string        `json:"company"`
	Address    store.Address `json:"address"`
	Notes      string        `json:"notes"`
	Version    int64         `json:"version"`
	OrderCount int64         `json:"order_count"`
}

// ackedCustomers is what the customer writers were told (deleted holds
// the email a deleted customer had).
type ackedCustomers = ackedRecords[customerJSON]

// customerWorkers is how many customer writers run beside a chaos run's
// order writers.
const customerWorkers = 4

var chaosCountries = []string{"DE", "FR", "GB", "US", "JP", ""}

// customerStep is one customer write of a chaos run: a create (with an
// email from a pool of 40, in any case: it may be taken), a rename, a
// change of email or of address with a fresh version, a change with a
// stale one (never accepted), or a DELETE racing a PUT of the same
// version (never both accepted; a customer with orders is not deleted).
func customerStep(a *ackedCustomers, base string, rnd *rand.Rand, w, i int) {
	path := func(id int64) string { return "/customers/" + strconv.FormatInt(id, 10) }
	email := func() string {
		e := fmt.Sprintf("ch%d@example.com", rnd.IntN(40))
		if rnd.IntN(2) == 0 {
			e = strings.ToUpper(e)
		}
		return e
	}
	put := func(id int64, v map[string]any) (*testutil.Resp, error) {
		return call(base, http.MethodPut, path(id), "application/json", jsonOf(v), testutil.HJSON)
	}
	id := a.pickHot(rnd.IntN)
	op := rnd.IntN(100)
	if id == 0 || op < 20 {
		v := map[string]any{"name": chaosName("C", rnd, w, i)}
		if rnd.IntN(3) > 0 {
			v["email"] = email()
		}
		r, err := call(base, http.MethodPost, "/customers", "application/json", jsonOf(v), testutil.HJSON)
		if c, ok := ackWrite(a, "created", 0, 0, r, err); ok {
			a.addHot(c.ID, 20)
		}
		return
	}
	c, ok := readMember[customerJSON](base, path(id))
	if !ok {
		return
	}
	switch {
	case op < 40:
		r, err := put(id, map[string]any{"name": chaosName("S", rnd, w, i), "version": c.Version})
		ackWrite(a, "updated", id, c.Version, r, err)
	case op < 52:
		r, err := put(id, map[string]any{"email": email(), "version": c.Version})
		ackWrite(a, "updated", id, c.Version, r, err)
	case op < 60:
		r, err := put(id, map[string]any{"address": map[string]any{"city": fmt.Sprintf("City %d", rnd.IntN(100)),
			"country": chaosCountries[rnd.IntN(len(chaosCountries))]}, "version": c.Version})
		ackWrite(a, "updated", id, c.Version, r, err)
	case op < 72:
		if c.Version < 2 {
			return
		}
		r, err := put(id, map[string]any{"notes": fmt.Sprintf("stale %d/%d", w, i), "version": c.Version - 1})
		if err == nil && r.Status < 300 {
			a.problem("stale accepted", "PUT customer %d with version %d (it was at v%d) answered %d", id, c.Version-1, c.Version, r.Status)
			return
		}
		ackWrite(a, "updated", id, c.Version-1, r, err)
	default:
		raceDelete(a, base, "/customers", id, c.Version, c.Email, func() bool {
			r, err := put(id, map[string]any{"notes": fmt.Sprintf("racing %d/%d", w, i), "version": c.Version})
			got, ok := ackWrite(a, "updated", id, c.Version, r, err)
			return ok && got.Version > c.Version
		})
	}
}

// customerChecks is what checkCustomers found: counts of what was checked
// and one count per kind of problem, each of which must be zero.
type customerChecks struct {
	Exist, Listed, Live, Links, Refused int

	collectionFaults
	SharedEmail    int // two customers with one email, case aside
	ClaimMissing   int // a create of a held email is not refused naming its holder
	SearchMissing  int // q=<a word of its name> does not find the customer
	LinkDangling   int // an order names a customer that does not exist
	WrongCount     int // a customer's order_count is not the number of orders naming it
	DeleteAccepted int // a customer with orders was deleted, or its 409 did not say how many
}

func (c *customerChecks) problems() int {
	if c == nil {
		return 0
	}
	return c.collectionProblems() + c.SharedEmail + c.ClaimMissing + c.SearchMissing + c.LinkDangling + c.WrongCount + c.DeleteAccepted
}

func (c *customerChecks) String() string {
	return fmt.Sprintf("%d customers exist, %d listed, %d acknowledged live customers, %d orders linking them, %d deletes of customers with orders refused; problems: "+
		"%d emails shared, %d claims missing, %d wrong totals, %d duplicates, %d missing from a list, %d listed but missing, %d in the wrong list, %d stale rows, "+
		"%d acknowledged but unreadable, %d older than acknowledged, %d deleted but readable, %d not found by name, "+
		"%d orders naming a missing customer, %d wrong order counts, %d customers with orders deleted, %d wrong answers to the load; %v",
		c.Exist, c.Listed, c.Live, c.Links, c.Refused, c.SharedEmail, c.ClaimMissing, c.WrongTotal, c.Duplicate, c.Missing, c.Dangling, c.WrongList,
		c.StaleRow, c.Unreadable, c.OlderThanAck, c.DeletedExists, c.SearchMissing, c.LinkDangling, c.WrongCount, c.DeleteAccepted,
		c.LoadProblems, c.History)
}

// checkCustomers checks the customers of the app at base against what
// the customer writers were told (a), and the links of the orders that
// exist (orders, by id) to them.
func checkCustomers(t *testing.T, base string, a *ackedCustomers, orders map[int64]orderJSON) *customerChecks {
	t.Helper()
	c := &customerChecks{}
	a.mu.Lock()
	defer a.mu.Unlock()
	var problems []string
	c.LoadProblems, problems = a.loadProblems()
	c.details = append(c.details, problems...)

	maxID := a.maxID()
	for _, o := range orders {
		maxID = max(maxID, o.CustomerID)
	}
	records, failed := probeRecords[customerJSON](base, "/customers", maxID)
	if len(failed) > 0 {
		t.Fatalf("reading every customer failed:\n%s", strings.Join(failed, "\n"))
	}
	c.Exist = len(records)
	ids := sortedIDs(records)
	holders := map[string]int64{}
	for _, id := range ids {
		if e := strings.ToLower(records[id].Email); e != "" {
			if other, ok := holders[e]; ok {
				c.add(&c.SharedEmail, "customers %d and %d share the email %q / %q", other, id, records[other].Email, records[id].Email)
			}
			holders[e] = id
		}
	}
	c.Live = checkAcked(&c.collectionFaults, "customer", records, a)
	// Every email is held (at most 50 of them): a create of it in
	// another case is refused naming its holder.
	held := 0
	for _, id := range ids {
		if e := records[id].Email; e != "" && held < 50 {
			held++
			if msg := claimHeld(t, base, "/customers", "email", e, "is already the email of customer "+strconv.FormatInt(id, 10), map[string]any{"name": "Taken?"}); msg != "" {
				c.add(&c.ClaimMissing, "%s", msg)
			}
		}
	}

	// Every sort of the List, whole.
	same := func(row, rec customerJSON) bool {
		return row.Name == rec.Name && row.Email == rec.Email && row.Company == rec.Company && row.Address == rec.Address &&
			row.Version == rec.Version && row.OrderCount == rec.OrderCount
	}
	all := func(customerJSON) bool { return true }
	for _, s := range store.CustomerSorts {
		rows := checkListOf(t, &c.collectionFaults, base, "/customers", "customers", "sort="+url.QueryEscape(string(s)), records, ids, all, same)
		c.Listed = len(rows)
	}
	// A search for the first word of its name finds each customer (at
	// most 300 of them; the load's first words are unique).
	for i, id := range ids {
		if i >= 300 {
			break
		}
		q := "q=" + url.QueryEscape(nameWord(records[id].Name))
		rows, _, err := walkPages[customerJSON](base, "/customers", "customers", q)
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		found := false
		for _, r := range rows {
			found = found || r.ID == id
		}
		if !found {
			c.add(&c.SearchMissing, "%s does not find customer %d %q among %d rows", q, id, records[id].Name, len(rows))
		}
	}

	// The links: every order names a customer that exists, and each
	// customer counts the orders that name it.
	linked := map[int64]int64{}
	for _, oid := range sortedIDs(orders) {
		o := orders[oid]
		if o.CustomerID == 0 {
			continue
		}
		c.Links++
		linked[o.CustomerID]++
		if _, ok := records[o.CustomerID]; !ok {
			gone := "never acknowledged as deleted"
			if e, ok := a.deleted[o.CustomerID]; ok {
				gone = fmt.Sprintf("acknowledged as deleted at v%d (email %q)", a.delVersion[o.CustomerID], e)
			}
			c.add(&c.LinkDangling, "order %d (v%d %q) names customer %d, which does not exist (%s)", oid, o.Version, o.Customer, o.CustomerID, gone)
		}
	}
	for _, id := range ids {
		if got := records[id].OrderCount; got != linked[id] {
			c.add(&c.WrongCount, "customer %d says %d orders, %d orders name it", id, got, linked[id])
		}
	}
	// A customer with orders is not deleted: a DELETE (of any version)
	// is a 409 that says how many (at most 50 of them).
	tried := 0
	for _, id := range ids {
		n := linked[id]
		if n == 0 || tried >= 50 {
			continue
		}
		tried++
		r, err := call(base, http.MethodDelete, "/customers/"+strconv.FormatInt(id, 10), "", nil, testutil.HJSON)
		if err != nil {
			t.Fatalf("DELETE /customers/%d: %v", id, err)
		}
		var e struct {
			Error string `json:"error"`
		}
		_ = r.Decode(&e)
		want := "has " + strconv.FormatInt(n, 10) + " order"
		if r.Status != http.StatusConflict || !strings.Contains(e.Error, want) {
			c.add(&c.DeleteAccepted, "DELETE customer %d, which %d orders name: %d %s, want 409 saying it %s", id, n, r.Status, testutil.Snippet(r.Body), want)
			continue
		}
		c.Refused++
	}

	c.History = checkHistoriesOf(&c.collectionFaults, base, "/customers", maxID, records, a.historyAcks(true))
	return c
}

// TestCustomerDeleteRacingAnOrderLink: a DELETE of a customer and a PUT
// that links an order to it, sent at once, never both succeed: either the
// order links a customer that exists, or the customer is gone and the
// link was refused (422). Round after round on a fresh customer each, on
// the embedded store, a Redis and a Cluster (where the order and the
// customer live in different slots).
func TestCustomerDeleteRacingAnOrderLink(t *testing.T) {
	testutil.Long(t)
	for _, target := range []string{"embedded", "redis", "cluster"} {
		t.Run(target, func(t *testing.T) {
			var redisArg string
			switch target {
			case "redis":
				redisArg = startRedis(t, 0).url()
			case "cluster":
				redisArg = startCluster(t, 3, 0).addrs()
			}
			raceDeleteAndLink(t, target, startApp(t, redisArg).base)
		})
	}
}

func raceDeleteAndLink(t *testing.T, target, base string) {
	const rounds = 200
	outcomes := map[string]int{}
	both := 0
	for round := range rounds {
		var c customerJSON
		mustCall(t, base, http.MethodPost, "/customers", "application/json", jsonOf(map[string]any{"name": fmt.Sprintf("Race %d", round)}), testutil.HJSON).
			WantStatus(t, http.StatusCreated).JSON(t, &c)
		var o orderJSON
		mustCall(t, base, http.MethodPost, "/orders", "application/json", jsonOf(map[string]any{"customer": "Race"}), testutil.HJSON).
			WantStatus(t, http.StatusCreated).JSON(t, &o)
		var linked, deleted *testutil.Resp
		done := make(chan struct{})
		go func() {
			defer close(done)
			linked = mustCall(t, base, http.MethodPut, "/orders/"+strconv.FormatInt(o.ID, 10), "application/json",
				jsonOf(map[string]any{"customer_id": c.ID}), testutil.HJSON)
		}()
		deleted = mustCall(t, base, http.MethodDelete, "/customers/"+strconv.FormatInt(c.ID, 10), "", nil, testutil.HJSON)
		<-done
		outcomes[fmt.Sprintf("link %d, delete %d", linked.Status, deleted.Status)]++
		if linked.Status == http.StatusOK && deleted.Status == http.StatusNoContent {
			both++
			if both <= 3 {
				t.Errorf("round %d: order %d linked customer %d (200) and the customer was deleted (204)", round, o.ID, c.ID)
			}
		}
	}
	line := fmt.Sprintf("a customer delete racing an order link, %s: %d rounds, %v", target, rounds, outcomes)
	figure(line)
	t.Log(line)
	if both > 0 {
		t.Errorf("%d of %d rounds left an order naming a deleted customer, want 0", both, rounds)
	}
}
