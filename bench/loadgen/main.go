// Command loadgen measures HTTP throughput and latency for bench/run.sh: it
// runs each case in turn, round after round (so slow drifts of a shared
// machine hit every case alike), and prints one Markdown table of medians
// over the rounds, then the ratios asked for.
//
// A case is "name=…|url=…" plus optional "pid=…" (the server's process, whose
// CPU time per request is reported), "ids=N" (the {id} in the URL is a random
// 1…N), "pages=N" ({page}: a random 1…N) and "c=N" (its own concurrency).
// {q} is a random customer-name prefix, {word} a random prefix of any word
// of a demo name, {sku} a random prefix of a demo SKU. Every request is bounded: each run
// stops after -d or -n requests, whichever comes first, and every request
// has a 5 s timeout. Only loopback addresses are accepted.
//
//	loadgen -rounds 5 -d 4s -c 8 \
//	  -case 'name=project|url=http://127.0.0.1:3000/orders/{id}|ids=1000000|pid=123' \
//	  -case 'name=floor|url=http://127.0.0.1:3100/orders/{id}|ids=1000000|pid=456' \
//	  -ratio 'project/floor'
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

type caseSpec struct {
	name, url string
	pid       int
	ids       int64
	pages     int64
	c         int
}

type result struct {
	requests, errors int64
	seconds          float64
	lat              []time.Duration // sorted
	bytes            int64
	serverCPU        float64 // seconds
	redisCPU         float64
	selfCPU          float64
	firstErr         string // what the first failure was
}

func (r result) rps() float64 { return float64(r.requests) / r.seconds }
func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// words are prefixes of any word of a demo name (first or last: a search
// term matches the start of any word of the customer name), skus prefixes
// of the demo SKUs.
var (
	words = []string{"ada", "hop", "lov", "tur", "knu", "ritch", "grace", "wirth", "berners", "ham", "ma", "jo", "lis", "perl"}
	skus  = []string{"kbd", "tee", "mug-01", "nb", "pen-3", "btl", "usb-c", "lmp", "stk-1", "cap"}
)

var prefixes = []string{"ad", "al", "gr", "li", "ma", "ke", "ba", "de", "fr", "ed", "ra", "do", "he", "jo",
	"ka", "ni", "sh", "ti", "so", "yu", "ada", "grace h", "ken t", "margaret"}

func main() {
	var cases, ratios multi
	flag.Var(&cases, "case", "a case: name=…|url=…[|pid=…][|ids=N][|pages=N][|c=N] (repeat)")
	flag.Var(&ratios, "ratio", "print the ratio of two cases: a/b (repeat)")
	rounds := flag.Int("rounds", 3, "rounds; each runs every case once, in turn")
	dur := flag.Duration("d", 3*time.Second, "length of one run")
	maxN := flag.Int64("n", 1_000_000, "most requests in one run")
	warm := flag.Duration("warm", time.Second, "warm-up before each case's first run (not measured)")
	conc := flag.Int("c", 8, "concurrent connections, unless a case says c=")
	accept := flag.String("accept", "text/html", "Accept header")
	redisPid := flag.Int("redis-pid", 0, "the redis-server process, whose CPU per request is reported")
	title := flag.String("title", "", "a heading printed above the table")
	flag.Parse()
	if len(cases) == 0 || *rounds < 1 || *dur <= 0 || *dur > time.Minute || *rounds > 50 {
		fmt.Fprintln(os.Stderr, "loadgen: give -case; -rounds 1…50, -d up to 1m")
		os.Exit(2)
	}
	var specs []caseSpec
	for _, c := range cases {
		s, err := parseCase(c, *conc)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(2)
		}
		specs = append(specs, s)
	}
	all := make(map[string][]result)
	for _, s := range specs {
		run(s, *warm, *maxN, *accept, 0, 0) // warm-up
	}
	for r := 1; r <= *rounds; r++ {
		for _, s := range specs {
			res := run(s, *dur, *maxN, *accept, s.pid, *redisPid)
			all[s.name] = append(all[s.name], res)
			fmt.Fprintf(os.Stderr, "round %d %-14s %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d\n",
				r, s.name, res.rps(), ms(res.pct(.5)), ms(res.pct(.99)), res.errors)
			if res.firstErr != "" {
				fmt.Fprintf(os.Stderr, "  first error: %s\n", res.firstErr)
			}
		}
	}
	if *title != "" {
		fmt.Printf("\n%s\n\n", *title)
	}
	fmt.Println("| case | conns | req/s | p50 ms | p90 ms | p99 ms | errors | KiB/resp | server CPU µs/req | redis CPU µs/req | loadgen CPU µs/req |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	med := map[string]summary{}
	for _, s := range specs {
		m := summarize(all[s.name])
		med[s.name] = m
		fmt.Printf("| %s | %d | %.0f | %.2f | %.2f | %.2f | %d | %.1f | %s | %s | %.0f |\n", s.name, s.c, m.rps, m.p50, m.p90, m.p99,
			m.errors, m.kib, opt(m.server), opt(m.redis), m.self)
	}
	fmt.Printf("\n(medians of %d rounds of %s each; latency in milliseconds)\n", *rounds, *dur)
	for _, r := range ratios {
		a, b, ok := strings.Cut(r, "/")
		ma, oka := med[a]
		mb, okb := med[b]
		if !ok || !oka || !okb {
			fmt.Fprintf(os.Stderr, "loadgen: -ratio %q names unknown cases\n", r)
			continue
		}
		fmt.Printf("RATIO %s/%s req/s %.3f  p50 %.3f  p99 %.3f  server-CPU/req %s\n", a, b,
			ma.rps/mb.rps, ma.p50/mb.p50, ma.p99/mb.p99, ratioOpt(ma.server, mb.server))
	}
}

type summary struct {
	rps, p50, p90, p99, kib, server, redis, self float64
	errors                                       int64
}

func summarize(rs []result) summary {
	median := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	var s summary
	s.rps = median(result.rps)
	s.p50 = median(func(r result) float64 { return ms(r.pct(.5)) })
	s.p90 = median(func(r result) float64 { return ms(r.pct(.9)) })
	s.p99 = median(func(r result) float64 { return ms(r.pct(.99)) })
	s.kib = median(func(r result) float64 { return float64(r.bytes) / float64(max(r.requests, 1)) / 1024 })
	perReq := func(cpu func(result) float64) float64 {
		return median(func(r result) float64 { return cpu(r) / float64(max(r.requests, 1)) * 1e6 })
	}
	s.server = perReq(func(r result) float64 { return r.serverCPU })
	s.redis = perReq(func(r result) float64 { return r.redisCPU })
	s.self = perReq(func(r result) float64 { return r.selfCPU })
	for _, r := range rs {
		s.errors += r.errors
	}
	return s
}

func opt(v float64) string {
	if v == 0 {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func ratioOpt(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return strconv.FormatFloat(a/b, 'f', 3, 64)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func parseCase(spec string, conc int) (caseSpec, error) {
	s := caseSpec{ids: 1, pages: 1, c: conc}
	for _, part := range strings.Split(spec, "|") {
		k, v, _ := strings.Cut(part, "=")
		var err error
		switch k {
		case "name":
			s.name = v
		case "url":
			s.url = v
		case "pid":
			s.pid, err = strconv.Atoi(v)
		case "ids":
			s.ids, err = strconv.ParseInt(v, 10, 64)
		case "pages":
			s.pages, err = strconv.ParseInt(v, 10, 64)
		case "c":
			s.c, err = strconv.Atoi(v)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return s, fmt.Errorf("case %q: %v", spec, err)
		}
	}
	if s.name == "" || s.url == "" || s.ids < 1 || s.pages < 1 || s.c < 1 || s.c > 256 {
		return s, fmt.Errorf("case %q: needs name= and url=, and positive ids, pages, c (at most 256)", spec)
	}
	u, err := url.Parse(strings.NewReplacer("{id}", "1", "{page}", "1", "{q}", "a", "{word}", "a", "{sku}", "a").Replace(s.url))
	if err != nil {
		return s, fmt.Errorf("case %q: %v", spec, err)
	}
	ips, err := net.LookupIP(u.Hostname())
	if err != nil || len(ips) == 0 || !slices.ContainsFunc(ips, func(ip net.IP) bool { return ip.IsLoopback() }) {
		return s, fmt.Errorf("case %q: only loopback targets are allowed", spec)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return s, fmt.Errorf("case %q: only loopback targets are allowed", spec)
		}
	}
	return s, nil
}

// run sends requests for d (or n of them) over s.c connections.
func run(s caseSpec, d time.Duration, n int64, accept string, pid, redisPid int) result {
	client := &fasthttp.Client{
		MaxConnsPerHost:          s.c,
		ReadTimeout:              5 * time.Second,
		WriteTimeout:             5 * time.Second,
		NoDefaultUserAgentHeader: true,
	}
	defer client.CloseIdleConnections()
	var (
		sent   atomic.Int64
		errs   atomic.Int64
		nbytes atomic.Int64
		mu     sync.Mutex
		lat    []time.Duration
		wg     sync.WaitGroup
		errOne sync.Once
		first  string
	)
	cpu0, rcpu0, self0 := procCPU(pid), procCPU(redisPid), selfCPU()
	start := time.Now()
	deadline := start.Add(d)
	for w := 0; w < s.c; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.Header.Set("Accept", accept)
			mine := make([]time.Duration, 0, 4096)
			var b []byte
			for time.Now().Before(deadline) && sent.Add(1) <= n {
				b = expand(b[:0], s, rnd)
				req.SetRequestURIBytes(b)
				t := time.Now()
				err := client.DoTimeout(req, resp, 5*time.Second)
				el := time.Since(t)
				if err != nil || resp.StatusCode() != fasthttp.StatusOK {
					errs.Add(1)
					errOne.Do(func() {
						if err != nil {
							first = err.Error()
						} else {
							first = fmt.Sprintf("status %d for %s", resp.StatusCode(), b)
						}
					})
					if err != nil {
						time.Sleep(10 * time.Millisecond) // a dead server: don't spin
					}
					continue
				}
				nbytes.Add(int64(len(resp.Body())))
				mine = append(mine, el)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	slices.Sort(lat)
	return result{requests: int64(len(lat)), errors: errs.Load(), seconds: el, lat: lat, bytes: nbytes.Load(),
		serverCPU: procCPU(pid) - cpu0, redisCPU: procCPU(redisPid) - rcpu0, selfCPU: selfCPU() - self0, firstErr: first}
}

func expand(b []byte, s caseSpec, rnd *rand.Rand) []byte {
	u := s.url
	for {
		i := strings.IndexByte(u, '{')
		if i < 0 {
			return append(b, u...)
		}
		b = append(b, u[:i]...)
		u = u[i:]
		switch {
		case strings.HasPrefix(u, "{id}"):
			b = strconv.AppendInt(b, 1+rnd.Int64N(s.ids), 10)
			u = u[4:]
		case strings.HasPrefix(u, "{page}"):
			b = strconv.AppendInt(b, 1+rnd.Int64N(s.pages), 10)
			u = u[6:]
		case strings.HasPrefix(u, "{word}"):
			b = append(b, url.QueryEscape(words[rnd.IntN(len(words))])...)
			u = u[6:]
		case strings.HasPrefix(u, "{sku}"):
			b = append(b, url.QueryEscape(skus[rnd.IntN(len(skus))])...)
			u = u[5:]
		case strings.HasPrefix(u, "{q}"):
			b = append(b, url.QueryEscape(prefixes[rnd.IntN(len(prefixes))])...)
			u = u[3:]
		default:
			b = append(b, '{')
			u = u[1:]
		}
	}
}

// procCPU is a process's user and system CPU seconds, all threads (0 when
// pid is 0 or unreadable).
func procCPU(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields count from after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// clockTicks is USER_HZ, 100 on Linux for every architecture Go supports here.
const clockTicks = 100

func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
