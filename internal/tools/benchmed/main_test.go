package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Medians per benchmark and the ratio to the raw baseline of the same
// package.
func TestMedianAndRatio(t *testing.T) {
	in := `pkg: example.com/a
BenchmarkRawTell-2   	100	  50.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkRawTell-2   	100	  40.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkRawTell-2   	100	  60.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkTellWithTelemetry-2	100	 200.0 ns/op	 9.5 heap-MiB	 64 B/op	 1 allocs/op
BenchmarkTellWithTelemetry-2	100	 100.0 ns/op	 9.5 heap-MiB	 64 B/op	 1 allocs/op
pkg: example.com/b
BenchmarkAgentTurn-2 	10	 3000 ns/op
BenchmarkRawModelCall-2	10	 1000 ns/op
BenchmarkLonely-2 	10	 7 ns/op
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"BenchmarkRawTell", "50.0 ns/op", "150.0 ns/op", "3.00x RawTell", "3.00x RawModelCall", "(n=3)", "9.5 heap-MiB"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got[strings.Index(got, "Lonely"):], "x ") {
		t.Errorf("a benchmark without baseline got a ratio:\n%s", got)
	}
}

// A malformed metric is an error naming the benchmark, not a zero.
func TestMalformed(t *testing.T) {
	err := run(strings.NewReader("BenchmarkX-2 10 abc ns/op\n"), &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "BenchmarkX") {
		t.Fatalf("err %v", err)
	}
}
