// Parses a Prometheus text exposition with Go's expfmt (the parser that rejected two flock
// pools before they shared one HELP/TYPE per family) and lints it with client_golang's
// promlint. Run by scripts/prom-check.sh when Go is installed. Usage: promlint FILE
package main

import (
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		fmt.Println("expfmt:", err)
		os.Exit(1)
	}
	fmt.Printf("expfmt: %d families parsed\n", len(fams))
	g, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	problems, err := promlint.New(g).Lint()
	if err != nil {
		fmt.Println("promlint:", err)
		os.Exit(1)
	}
	for _, pr := range problems {
		fmt.Printf("promlint: %s: %s\n", pr.Metric, pr.Text)
	}
	fmt.Printf("promlint: %d problems\n", len(problems))
	if len(problems) > 0 {
		os.Exit(1)
	}
}
