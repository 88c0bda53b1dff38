// The differential fuzz target's other side: Prometheus's own text parser (model/textparse's
// PromParser, the scrape loop's, from ../shared/peers) over each file named on the command
// line, in the canonical form exposition_canon prints for gpuledger's parser (canon.md):
//
//	FILE <path>
//	ACCEPT <n>        then n lines: <name> TAB <k=v,...> TAB <value bits> TAB <timestamp|->
//	REJECT
//
// Names, label names and values are in hex, so that every byte compares; pairs sorted as text;
// a value as its float64 bits (every NaN one "nan": a query cannot tell them apart).
//
// A document is accepted as a Prometheus scrape accepts it: every entry parses, and every
// series has a metric name, valid label names and values (labels.IsValid) and no label name
// twice (what the TSDB refuses to append).
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

func hasDuplicate(lset labels.Labels) bool {
	_, dup := lset.HasDuplicateLabelNames()
	return dup
}

func canon(data []byte) (lines []string, ok bool) {
	p := textparse.NewPromParser(data)
	for {
		entry, err := p.Next()
		if err == io.EOF {
			return lines, true
		}
		if err != nil {
			return nil, false
		}
		if entry != textparse.EntrySeries {
			continue
		}
		_, ts, v := p.Series()
		var lset labels.Labels
		p.Metric(&lset)
		if !lset.Has(labels.MetricName) || !lset.IsValid() || hasDuplicate(lset) {
			return nil, false
		}
		var pairs []string
		name := ""
		lset.Range(func(l labels.Label) {
			if l.Name == labels.MetricName {
				name = l.Value
				return
			}
			pairs = append(pairs, fmt.Sprintf("%x=%x", l.Name, l.Value))
		})
		sort.Strings(pairs)
		stamp := "-"
		if ts != nil {
			stamp = fmt.Sprint(*ts)
		}
		bits := fmt.Sprintf("%016x", math.Float64bits(v))
		if math.IsNaN(v) {
			bits = "nan" // every NaN is one value to a query
		}
		lines = append(lines, fmt.Sprintf("%x\t%s\t%s\t%s", name, strings.Join(pairs, ","), bits, stamp))
	}
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintf(out, "FILE %s\n", path)
		lines, ok := canon(data)
		if !ok {
			fmt.Fprintln(out, "REJECT")
			continue
		}
		fmt.Fprintf(out, "ACCEPT %d\n", len(lines))
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
	}
}
