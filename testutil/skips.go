package testutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// FullEnv names the environment variable that runs the long suites: chaos,
// failover, cluster and crash tests, browser sweeps, soak and large-N cost
// tests. Without it `go test ./...` runs a quick subset of them, or a
// smaller N; .ci/run sets it.
const FullEnv = "ORDERS_FULL"

// Full reports whether the long suites run in full (ORDERS_FULL=1).
func Full() bool { return os.Getenv(FullEnv) == "1" }

// Pick returns quick without ORDERS_FULL=1 and full with it: the size of a
// test that proves the same thing at a smaller N.
func Pick[T any](quick, full T) T {
	if Full() {
		return full
	}
	return quick
}

// Long skips t unless ORDERS_FULL=1, and counts it for the package's
// summary line (Main).
func Long(t testing.TB) {
	t.Helper()
	if Full() {
		return
	}
	Skip(t, "long (set "+FullEnv+"=1 to run them; .ci/run does)")
}

// KnownBug skips t for a known bug the test demonstrates, named on the
// package's summary line (Main) so that it shows on go test's default
// output.
func KnownBug(t testing.TB, bug string) {
	t.Helper()
	record("skipped for a known bug", t.Name()+": "+bug, t.Name())
	t.Skip("known bug: " + bug)
}

// Skip skips t for why and counts it under why on the package's summary
// line (Main): tests skipped for the same reason are one line.
func Skip(t testing.TB, why string) {
	t.Helper()
	record("skipped", why, t.Name())
	t.Skip(why)
}

// Missed notes that t ran without its target named target (a real Redis,
// say) because of why, and goes on; Main counts it.
func Missed(t testing.TB, target, why string) {
	t.Helper()
	record("ran without their "+target+" target", why, t.Name())
	t.Logf("*** ran without the %s target: %s ***", target, why)
}

// reason is one line of the summary: what happened ("skipped", "ran
// without") and why.
type reason struct{ what, why string }

var skips = struct {
	sync.Mutex
	tests map[reason]map[string]bool // top-level test names
}{tests: map[reason]map[string]bool{}}

func record(what, why, test string) {
	test, _, _ = strings.Cut(test, "/")
	skips.Lock()
	defer skips.Unlock()
	r := reason{what, why}
	if skips.tests[r] == nil {
		skips.tests[r] = map[string]bool{}
	}
	skips.tests[r][test] = true
}

// Main is the TestMain of every test package: it runs the tests, then
// writes one line per reason tests were skipped where go test's default
// output shows it, and exits with the tests' code.
//
// go test hides a passing package's output, so the lines go to the go
// command's own standard error (on Linux, /proc/<parent>/fd/2), and to the
// test binary's when that cannot be opened or the parent is not go.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain that has more to do after the tests: it runs
// them, writes the summary lines and returns the exit code.
func Run(m *testing.M) int {
	code := m.Run()
	if lines := summary(); len(lines) > 0 {
		w, closeW := goStderr()
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		closeW()
	}
	return code
}

// summary is one line per reason, "--- ./store: 12 tests skipped: why",
// and one per known bug, "--- ./store: skipped for a known bug: TestX: bug".
func summary() []string {
	skips.Lock()
	defer skips.Unlock()
	pkg := packageDir()
	var lines []string
	for r, tests := range skips.tests {
		switch {
		case r.what == "skipped for a known bug":
			lines = append(lines, fmt.Sprintf("--- %s: %s: %s", pkg, r.what, r.why))
		case len(tests) == 1:
			lines = append(lines, fmt.Sprintf("--- %s: 1 test %s: %s", pkg, r.what, r.why))
		default:
			lines = append(lines, fmt.Sprintf("--- %s: %d tests %s: %s", pkg, len(tests), r.what, r.why))
		}
	}
	sort.Strings(lines)
	return lines
}

// packageDir is the test's package as a path from the module's root
// ("./store", or "." for the root): go test runs a test binary in its
// package's folder.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return filepath.Base(wd)
		}
	}
}

// goStderr is the go command's standard error when this binary's parent is
// the go command and its descriptors can be opened, else os.Stderr. A
// regular file the go command writes without O_APPEND (`> log`) is left
// alone: its own offset would write over the lines.
func goStderr() (io.Writer, func()) {
	ppid := os.Getppid()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	if err != nil || filepath.Base(exe) != "go" {
		return os.Stderr, func() {}
	}
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/2", ppid), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return os.Stderr, func() {}
	}
	if st, err := f.Stat(); err != nil || (st.Mode().IsRegular() && !appends(ppid, 2)) {
		_ = f.Close()
		return os.Stderr, func() {}
	}
	return f, func() { _ = f.Close() }
}

// appends reports whether process pid opened its descriptor fd with
// O_APPEND (the "flags:" line of /proc/<pid>/fdinfo/<fd>, in octal).
func appends(pid, fd int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", pid, fd))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			flags, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&syscall.O_APPEND != 0
		}
	}
	return false
}
