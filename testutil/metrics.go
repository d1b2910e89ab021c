package testutil

import (
	"strconv"
	"strings"
	"testing"
)

// ParseMetrics reads Prometheus's text format: every series, with its
// labels as written, and its value.
func ParseMetrics(t testing.TB, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("not a series: %q", line)
		}
		out[line[:i]] = v
	}
	return out
}
