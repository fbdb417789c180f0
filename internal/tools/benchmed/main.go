// Command benchmed reads `go test -bench` output (several -count runs) and
// prints, per benchmark, the median of each metric (ns/op, allocs/op,
// B/op, then those of b.ReportMetric by unit) and, when the package has a
// baseline named Raw<X> (or RawModelCall for AgentTurn), the ratio of the
// medians: the figures docs/performance.md reports.
//
// Usage (from the module root):
//
//	go test -run '^$' -bench . -benchmem -count 5 ./actor ./orchestrator | go run ./internal/tools/benchmed
package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// line matches "BenchmarkX-2   123   456 ns/op   7 B/op ...".
var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// pkgLine matches the "pkg: path" header go test prints per package.
var pkgLine = regexp.MustCompile(`^pkg: (\S+)`)

type key struct{ pkg, name string }

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchmed:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	values := map[key]map[string][]float64{}
	var order []key
	pkg := ""
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		t := sc.Text()
		if m := pkgLine.FindStringSubmatch(t); m != nil {
			pkg = m[1]
			continue
		}
		m := line.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		k := key{pkg, m[1]}
		if values[k] == nil {
			values[k] = map[string][]float64{}
			order = append(order, k)
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("%s: metric %q: %w", k.name, f[i+1], err)
			}
			values[k][f[i+1]] = append(values[k][f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, k := range order {
		ns := median(values[k]["ns/op"])
		fmt.Fprintf(out, "%-60s %12.1f ns/op", k.pkg+" "+k.name, ns)
		for _, unit := range []string{"allocs/op", "B/op"} {
			if v, ok := values[k][unit]; ok {
				fmt.Fprintf(out, " %10.1f %s", median(v), unit)
			}
		}
		for _, unit := range slices.Sorted(maps.Keys(values[k])) { // metrics of b.ReportMetric
			if unit != "ns/op" && unit != "allocs/op" && unit != "B/op" {
				fmt.Fprintf(out, " %10.1f %s", median(values[k][unit]), unit)
			}
		}
		if base, ok := baseline(values, k); ok {
			fmt.Fprintf(out, "   %.2fx %s", ns/median(values[base]["ns/op"]), strings.TrimPrefix(base.name, "Benchmark"))
		}
		fmt.Fprintf(out, "   (n=%d)\n", len(values[k]["ns/op"]))
	}
	return nil
}

// baseline finds the raw baseline of k in the same package.
func baseline(values map[key]map[string][]float64, k key) (key, bool) {
	name := strings.TrimPrefix(k.name, "Benchmark")
	if strings.HasPrefix(name, "Raw") {
		return key{}, false
	}
	candidates := []string{"BenchmarkRaw" + name}
	if i := strings.IndexAny(name, "/"); i > 0 {
		candidates = append(candidates, "BenchmarkRaw"+name[:i])
	}
	for _, prefix := range []string{"TellWithTelemetry", "Tell"} {
		if strings.HasPrefix(name, prefix) {
			candidates = append(candidates, "BenchmarkRawTell")
		}
	}
	if name == "AgentTurn" {
		candidates = append(candidates, "BenchmarkRawModelCall")
	}
	for _, c := range candidates {
		if _, ok := values[key{k.pkg, c}]; ok {
			return key{k.pkg, c}, true
		}
	}
	return key{}, false
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
