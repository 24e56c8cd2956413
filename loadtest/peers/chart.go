package main

import (
	"fmt"
	"math"
	"strings"
)

// chartPanel is one figure of the chart: a horizontal bar per system on a
// log10 scale (the systems differ by orders of magnitude).
type chartPanel struct {
	title string
	value func(r row) float64
	unit  string
}

var chartPanels = []chartPanel{
	{"bytes per waiting agent (lower is better)", func(r row) float64 { return float64(r.BytesPerWaitingAgent) }, "B"},
	{"completions per second (higher is better)", func(r row) float64 { return r.CompletionsPerSec }, "/s"},
	{"wake-up p99 under load, ms (lower is better)", func(r row) float64 { return r.WakeP99Ms }, "ms"},
	{"disk bytes per agent (lower is better)", func(r row) float64 { return float64(r.DiskBytesPerAgent) }, "B"},
}

var chartColors = map[string]string{
	"agentslice-memory": "#1f77b4", "agentslice-sqlite": "#174a7e", "density-sqlite": "#6baed6",
	"restate": "#d62728", "dbos": "#2ca02c", "cloudflare": "#ff7f0e",
}

// peersChart draws the ok rows of one run as an SVG: four panels of
// log-scale bars, the run's agents, turns, machine and date in the title.
func peersChart(rows []row) string {
	var ok []row
	for _, r := range rows {
		if r.Status == "ok" {
			ok = append(ok, r)
		}
	}
	const W, L, panelW, barH, gap, head = 1080, 185, 360, 16, 4, 60
	panelH := len(ok)*(barH+gap) + 40
	H := head + 2*panelH + 30
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	s.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	title := "the peers workload (loadtest/peers)"
	if len(ok) > 0 {
		title = fmt.Sprintf("the same agent workload on each system, %d turns per agent (%s, %s)", ok[0].Turns, ok[0].Machine, ok[0].Date[:10])
	}
	fmt.Fprintf(&s, `<text x="20" y="24" font-size="15">%s</text>`+"\n", esc(title))
	s.WriteString(`<text x="20" y="42" font-size="11" fill="#555">log scales; each bar labelled with its value; N agents in brackets after each system</text>` + "\n")
	for i, p := range chartPanels {
		x0 := L + (i%2)*(panelW+L-20)
		y0 := head + (i/2)*panelH
		fmt.Fprintf(&s, `<text x="%d" y="%d">%s</text>`+"\n", x0, y0+12, esc(p.title))
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range ok {
			if v := p.value(r); v > 0 {
				lo, hi = min(lo, math.Log10(v)), max(hi, math.Log10(v))
			}
		}
		lo, hi = math.Floor(lo)-0.3, hi+0.15
		for j, r := range ok {
			y := y0 + 22 + j*(barH+gap)
			fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="end">%s (%d)</text>`+"\n", x0-6, y+barH-4, esc(r.System), r.Agents)
			v := p.value(r)
			if v <= 0 || math.IsInf(lo, 0) {
				fmt.Fprintf(&s, `<text x="%d" y="%d" fill="#888">n/a</text>`+"\n", x0+4, y+barH-4)
				continue
			}
			w := (math.Log10(v) - lo) / (hi - lo) * float64(panelW-70)
			color := chartColors[r.System]
			if color == "" {
				color = "#7f7f7f"
			}
			fmt.Fprintf(&s, `<rect x="%d" y="%d" width="%.0f" height="%d" fill="%s"/>`+"\n", x0, y, w, barH, color)
			fmt.Fprintf(&s, `<text x="%.0f" y="%d" font-size="11">%s</text>`+"\n", float64(x0)+w+4, y+barH-4, esc(human(v, p.unit)))
		}
	}
	s.WriteString("</svg>\n")
	return s.String()
}

// human formats v with a k/M/G suffix and the unit.
func human(v float64, unit string) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.1fG%s", v/1e9, unit)
	case v >= 1e6:
		return fmt.Sprintf("%.1fM%s", v/1e6, unit)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk%s", v/1e3, unit)
	case v >= 100:
		return fmt.Sprintf("%.0f%s", v, unit)
	default:
		return fmt.Sprintf("%.2g%s", v, unit)
	}
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
