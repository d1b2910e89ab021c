package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"orders/testutil"
)

// The tests here flood the built binary from several loopback source
// addresses (on Linux all of 127.0.0.0/8 is the loopback interface), under
// an open-file limit lowered with prlimit so that a flood of a few hundred
// connections is more than the process can hold.

// fileLimit is the open-file limit the flooded app runs under.
const fileLimit = 512

// startLimitedApp runs the binary under prlimit with fileLimit open files
// on the embedded store and waits until /healthz answers. It skips loudly
// (fails with ORDERS_REQUIRE_EDGE=1) when prlimit or the extra loopback
// addresses are missing.
func startLimitedApp(t *testing.T, env ...string) *appServer {
	t.Helper()
	requireEdgeTools(t)
	return startAppVia(t, []string{"prlimit", fmt.Sprintf("--nofile=%d:%d", fileLimit, fileLimit)}, "", env...)
}

func requireEdgeTools(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("prlimit"); err != nil {
		testutil.SkipEdge(t, "prlimit (util-linux) is not installed")
	}
	testutil.Loopback(t, 2)
}

// loopback is the loopback address 127.0.0.n.
func loopback(n int) net.IP { return net.IPv4(127, 0, 0, byte(n)) }

// flood is connections a test opened and holds.
type flood struct {
	mu    sync.Mutex
	conns []net.Conn
	// dialFailed counts dials that did not connect at all.
	dialFailed int
}

// open dials n connections from the source address from to addr and
// writes first (may be empty: an idle connection) on each.
func (f *flood) open(t *testing.T, from net.IP, addr string, n int, first string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from}, Timeout: 2 * time.Second}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := d.Dial("tcp", addr)
			if err == nil && first != "" {
				_, err = io.WriteString(c, first)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if err != nil {
				f.dialFailed++
				if c != nil {
					c.Close()
				}
				return
			}
			f.conns = append(f.conns, c)
		}()
	}
	wg.Wait()
}

// census sorts the connections into held (nothing to read: the server
// keeps them open, or the kernel queues them) and refused (closed by the
// server at once: EOF or a reset on the first read).
func (f *flood) census() (held, refused int) {
	f.mu.Lock()
	conns := append([]net.Conn(nil), f.conns...)
	f.mu.Unlock()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			mu.Lock()
			defer mu.Unlock()
			if errors.As(err, &ne) && ne.Timeout() {
				held++
			} else {
				refused++
			}
		}()
	}
	wg.Wait()
	return held, refused
}

func (f *flood) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// clientFrom is an HTTP client whose connections come from the source
// address from.
func clientFrom(from net.IP) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from}, Timeout: 2 * time.Second}
	return &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// healthy says whether /healthz answers 200 to a client at from.
func healthy(base string, from net.IP) error {
	res, err := clientFrom(from).Get(base + "/healthz")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("/healthz answered %d", res.StatusCode)
	}
	return nil
}

// halfSent is the start of a request whose headers never end.
const halfSent = "GET /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nX-Padding: "

// TestConnectionFloodsNeverStopTheServer floods the app, whose open-file
// limit is 512, with idle connections and half-sent requests from several
// addresses: more connections than it has file descriptors. With the
// default caps (three quarters of the limit in all, and 100 per address
// here) the flood is held at the caps, a client at another address is
// still served, and half-sent requests get 408 once their 10 s for the
// headers are up. With a total cap set above the file limit, the process
// runs out of descriptors: it must keep accepting once the flood ends.
func TestConnectionFloodsNeverStopTheServer(t *testing.T) {
	testutil.Long(t)
	t.Run("within the caps", func(t *testing.T) {
		app := startLimitedApp(t, "MAX_CONNS_PER_IP=100")
		addr := strings.TrimPrefix(app.base, "http://")
		f := &flood{}
		defer f.close()
		for n := 2; n <= 3; n++ {
			f.open(t, loopback(n), addr, 200, "")
		}
		slow := &flood{}
		defer slow.close()
		slow.open(t, loopback(4), addr, 200, halfSent)
		held, refused := f.census()
		sHeld, sRefused := slow.census()
		figure(fmt.Sprintf("edge flood (open-file limit %d, per-address cap 100): %d idle and %d half-sent connections tried from 3 addresses; held %d, refused %d; %d dials failed",
			fileLimit, 400, 200, held+sHeld, refused+sRefused, f.dialFailed+slow.dialFailed))
		if !app.running() {
			t.Fatalf("the app exited under the flood; its output:\n%s", tail(app.out.String(), 20))
		}
		if held+sHeld > 300 {
			t.Errorf("%d connections held from 3 addresses, want at most 3 × 100", held+sHeld)
		}
		if refused+sRefused < 300 {
			t.Errorf("%d connections refused, want at least 300 (each address past its 100)", refused+sRefused)
		}
		if err := healthy(app.base, loopback(9)); err != nil {
			t.Errorf("during the flood, a client at 127.0.0.9: %v, want /healthz to answer", err)
		}

		// More addresses: the total cap (384 of 512) holds, the rest are
		// refused at once, and the process lives on.
		more := &flood{}
		defer more.close()
		for n := 10; n <= 12; n++ {
			more.open(t, loopback(n), addr, 100, "")
		}
		mHeld, mRefused := more.census()
		figure(fmt.Sprintf("edge flood past the total cap (384): 300 more idle connections from 3 more addresses; held %d, refused %d", mHeld, mRefused))
		if !app.running() {
			t.Fatalf("the app exited at the total cap; its output:\n%s", tail(app.out.String(), 20))
		}
		if mRefused == 0 {
			t.Errorf("past the total cap no connection was refused (held %d)", mHeld)
		}

		// The half-sent requests are answered 408 once their 10 s are up.
		answered := 0
		for _, c := range slow.conns {
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				continue
			}
			res.Body.Close()
			if res.StatusCode == http.StatusRequestTimeout {
				answered++
				if answered == 1 && res.Header.Get("Content-Security-Policy") == "" {
					t.Errorf("the 408 to a half-sent request has no Content-Security-Policy: %v", res.Header)
				}
			}
		}
		if answered != sHeld {
			t.Errorf("%d of the %d half-sent requests held got 408, want all", answered, sHeld)
		}
		f.close()
		more.close()
		if err := healthy(app.base, loopback(2)); err != nil {
			t.Errorf("after the flood, a client at 127.0.0.2: %v, want /healthz to answer", err)
		}
	})

	t.Run("past the file limit", func(t *testing.T) {
		// A total cap above what the process can open: accepting runs out
		// of descriptors, waits and tries again.
		app := startLimitedApp(t, "MAX_CONNS=2000", "MAX_CONNS_PER_IP=200")
		addr := strings.TrimPrefix(app.base, "http://")
		f := &flood{}
		defer f.close()
		for n := 2; n <= 4; n++ {
			f.open(t, loopback(n), addr, 200, "")
		}
		f.open(t, loopback(5), addr, 100, halfSent)
		held, refused := f.census()
		figure(fmt.Sprintf("edge flood past the open-file limit (%d, total cap 2000): 700 connections tried from 4 addresses; held or queued %d, refused %d; %d dials failed",
			fileLimit, held, refused, f.dialFailed))
		time.Sleep(200 * time.Millisecond) // the accept loop meets EMFILE
		if !app.running() {
			t.Fatalf("the app exited when it ran out of file descriptors; its output:\n%s", tail(app.out.String(), 20))
		}
		f.close()
		var err error
		for range 50 { // the accept loop's back-off is at most 1 s
			if err = healthy(app.base, loopback(9)); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("after the flood, /healthz: %v", err)
		}
		if !app.running() {
			t.Fatalf("the app exited; its output:\n%s", tail(app.out.String(), 20))
		}
		if !strings.Contains(app.out.String(), "out of file descriptors") {
			t.Errorf("the app never ran out of file descriptors: the flood did not reach the limit; its output:\n%s", tail(app.out.String(), 20))
		}
	})
}

// rssKB is the resident memory of process pid in KiB.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("reading the app's memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

// TestAnnouncedBodiesTakeNoMemoryUntilTheyArrive opens 300 connections from
// three addresses, each announcing a body of 4 MiB or 1 MiB + 1 and sending
// one byte of it. The app takes memory for what arrives, not for what is
// announced: its resident memory grows by far less than 300 × 4 MiB, and
// /healthz answers throughout.
func TestAnnouncedBodiesTakeNoMemoryUntilTheyArrive(t *testing.T) {
	testutil.Long(t)
	app := startLimitedApp(t)
	addr := strings.TrimPrefix(app.base, "http://")
	pid := app.cmd.Process.Pid // prlimit execs the app: the same process
	before := rssKB(t, pid)
	f := &flood{}
	defer f.close()
	const n = 300
	for i, length := range []int{4 << 20, 1<<20 + 1, 4 << 20} {
		head := "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n" +
			"Content-Length: " + strconv.Itoa(length) + "\r\n\r\n{"
		f.open(t, loopback(20+i), addr, n/3, head)
	}
	held, refused := f.census()
	peak := before
	for range 10 {
		peak = max(peak, rssKB(t, pid))
		time.Sleep(100 * time.Millisecond)
	}
	healthErr := healthy(app.base, loopback(30))
	figure(fmt.Sprintf("edge body flood: %d connections announcing 4 MiB or 1 MiB + 1 and sending 1 byte (held %d, refused %d): app RSS %d MB before, %d MB at the peak (%d MB announced)",
		n, held, refused, before>>10, peak>>10, (2*(4<<20)+(1<<20))*n/3>>20))
	if !app.running() {
		t.Fatalf("the app exited under the body flood; its output:\n%s", tail(app.out.String(), 20))
	}
	if grew := (peak - before) >> 10; grew > 100 {
		t.Errorf("the app's memory grew by %d MB under %d announced bodies of one byte, want under 100 MB", grew, n)
	}
	if healthErr != nil {
		t.Errorf("during the body flood, /healthz: %v", healthErr)
	}
	if _, err := clientFrom(loopback(31)).Do(mustRequest(t, app.base+"/orders")); err != nil {
		t.Errorf("during the body flood, GET /orders: %v", err)
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	return req
}

// TestBodyFloodHeldWithinTheBudget opens 200 connections from four
// addresses, each sending a whole 1 MiB body but its last byte, then
// holding it: every body the app reads is in its memory until it ends.
// With a budget of 32 MiB for the bodies being read, the app reads at most
// 32 of them and answers the rest 503 at once, with Retry-After and the
// security headers; its memory grows by far less than 200 MiB, /healthz
// answers from another address, and once the held bodies end they are
// served and a new body is read again.
func TestBodyFloodHeldWithinTheBudget(t *testing.T) {
	testutil.Long(t)
	const budgetMiB = 32
	app := startLimitedApp(t, "BODY_BUDGET="+strconv.Itoa(budgetMiB))
	addr := strings.TrimPrefix(app.base, "http://")
	pid := app.cmd.Process.Pid
	order := `{"customer":"Flood","items":[{"name":"Cup","quantity":1,"unit_price":"2.50"}]}`
	body := order + strings.Repeat(" ", 1<<20-len(order)) // 1 MiB: JSON ends in spaces
	head := "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"

	type answer struct {
		status int
		header http.Header
	}
	const perAddr, addrs = 50, 4
	var (
		conns   []net.Conn
		mu      sync.Mutex
		answers []answer
		readers sync.WaitGroup
	)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	before := rssKB(t, pid)
	for a := range addrs {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: loopback(40 + a)}, Timeout: 2 * time.Second}
		for range perAddr {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("dialling from 127.0.0.%d: %v", 40+a, err)
			}
			conns = append(conns, c)
			readers.Add(1)
			go func() {
				defer readers.Done()
				_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
				an := answer{}
				if res, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					res.Body.Close()
					an = answer{res.StatusCode, res.Header}
				}
				mu.Lock()
				answers = append(answers, an)
				mu.Unlock()
			}()
		}
	}
	var writers sync.WaitGroup
	for _, c := range conns {
		writers.Add(1)
		go func() {
			defer writers.Done()
			_, _ = io.WriteString(c, head+body[:len(body)-1])
		}()
	}
	writers.Wait()
	peak := before
	for range 10 {
		peak = max(peak, rssKB(t, pid))
		time.Sleep(100 * time.Millisecond)
	}
	healthErr := healthy(app.base, loopback(49))
	mu.Lock()
	early := append([]answer(nil), answers...)
	mu.Unlock()

	// The bodies held end: each is read whole and served.
	for _, c := range conns {
		_, _ = io.WriteString(c, body[len(body)-1:])
	}
	readers.Wait()
	refused, created, other := 0, 0, map[int]int{}
	var refusal http.Header
	for _, an := range answers {
		switch an.status {
		case http.StatusServiceUnavailable:
			refused++
			refusal = an.header
		case http.StatusCreated:
			created++
		default:
			other[an.status]++
		}
	}
	figure(fmt.Sprintf("edge body budget (%d MiB): %d connections from %d addresses each sending 1 MiB − 1 byte of body and holding: %d refused 503 at once (%d before the bodies ended), %d read and created once their last byte came, others %v; app RSS %d MB before, %d MB at the peak",
		budgetMiB, len(conns), addrs, refused, len(early), created, other, before>>10, peak>>10))
	if !app.running() {
		t.Fatalf("the app exited under the body flood; its output:\n%s", tail(app.out.String(), 20))
	}
	if healthErr != nil {
		t.Errorf("during the body flood, /healthz from another address: %v", healthErr)
	}
	if created > budgetMiB {
		t.Errorf("%d bodies of 1 MiB were read at once, want at most %d (the budget)", created, budgetMiB)
	}
	if refused < len(conns)-budgetMiB {
		t.Errorf("%d of %d bodies were refused 503, want at least %d (all past the budget)", refused, len(conns), len(conns)-budgetMiB)
	}
	if refusal != nil && (refusal.Get("Retry-After") == "" || refusal.Get("Content-Security-Policy") == "") {
		t.Errorf("the 503 lacks Retry-After or the security headers: %v", refusal)
	}
	if grew := (peak - before) >> 10; grew > 4*budgetMiB {
		t.Errorf("the app's memory grew by %d MB under %d bodies of 1 MiB with a budget of %d MiB, want under %d MB", grew, len(conns), budgetMiB, 4*budgetMiB)
	}
	// Every share of the budget was given back: a new body is read.
	r, err := call(app.base, http.MethodPost, "/orders", "application/json", []byte(body), testutil.HJSON)
	if err != nil {
		t.Errorf("after the flood, a POST of 1 MiB: %v", err)
	} else if r.Status != http.StatusCreated {
		t.Errorf("after the flood, a POST of 1 MiB answered %d, want 201: %s", r.Status, r.Body)
	}
}
