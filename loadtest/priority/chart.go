package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// chart draws the three variants side by side as an SVG: interactive p50
// and p99 reply latency (log scale, since fifo's is orders of magnitude
// above the others) and background completions per second.
func chart(r *Result, vs []*variant) string {
	const W, H, L, top, plotH = 900, 420, 90, 50, 260
	colors := map[string]string{"no_flood": "#7f7f7f", "priority": "#1f77b4", "fifo": "#d62728"}
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	s.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&s, `<text x="%d" y="24" font-size="15">agentslice priority classes: interactive reply latency and background throughput under a flood</text>`+"\n", L)

	// Left panel: latency, log10 scale from 100 ms to the largest p99.
	maxMs := 1000.0
	for _, v := range vs {
		maxMs = max(maxMs, ms(pct(v.interactive, 99)))
	}
	lo, hi := 2.0, log10(maxMs)+0.2
	y := func(msv float64) float64 {
		return float64(top+plotH) - (log10(max(msv, 100))-lo)/(hi-lo)*float64(plotH)
	}
	panelW := 480
	fmt.Fprintf(&s, `<text x="%d" y="%d">interactive reply latency (log scale)</text>`+"\n", L, top-8)
	fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, top+plotH, L+panelW, top+plotH)
	for _, t := range []float64{100, 300, 1000, 3000, 10000, 30000, 100000} {
		if log10(t) > hi {
			break
		}
		fmt.Fprintf(&s, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#eee"/>`+"\n", L, y(t), L+panelW, y(t))
		fmt.Fprintf(&s, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", L-6, y(t)+4, time.Duration(t*float64(time.Millisecond)))
	}
	for i, v := range vs {
		x0 := L + 20 + i*150
		for j, p := range []float64{50, 99} {
			val := ms(pct(v.interactive, p))
			x := x0 + j*60
			fmt.Fprintf(&s, `<rect x="%d" y="%.0f" width="50" height="%.0f" fill="%s" opacity="%s"/>`+"\n",
				x, y(val), float64(top+plotH)-y(val), colors[v.name], map[int]string{0: "0.55", 1: "1"}[j])
			fmt.Fprintf(&s, `<text x="%d" y="%.0f" text-anchor="middle" font-size="11">p%.0f %s</text>`+"\n", x+25, y(val)-4, p, fmtMs(val))
		}
		fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", x0+55, top+plotH+18, v.name)
	}

	// Right panel: background completions per second (linear).
	bx, bw := L+panelW+80, 200
	maxC := max(r.BackgroundCPSPriority, r.BackgroundCPSFIFO, 1) * 1.15
	fmt.Fprintf(&s, `<text x="%d" y="%d">background completions/s</text>`+"\n", bx, top-8)
	fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", bx, top+plotH, bx+bw, top+plotH)
	for i, v := range vs[1:] {
		h := v.bgCPS / maxC * float64(plotH)
		x := bx + 20 + i*90
		fmt.Fprintf(&s, `<rect x="%d" y="%.0f" width="60" height="%.0f" fill="%s"/>`+"\n", x, float64(top+plotH)-h, h, colors[v.name])
		fmt.Fprintf(&s, `<text x="%d" y="%.0f" text-anchor="middle" font-size="11">%.1f/s</text>`+"\n", x+30, float64(top+plotH)-h-4, v.bgCPS)
		fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", x+30, top+plotH+18, v.name)
	}
	fmt.Fprintf(&s, `<text x="%d" y="%d" fill="#555" font-size="11">throttle errors: priority %d, fifo %d, no_flood %d; background max wait (priority) %s</text>`+"\n",
		L, top+plotH+48, r.ThrottlePriority, r.ThrottleFIFO, r.ThrottleNoFlood, fmtMs(r.BackgroundMaxWaitPrio))
	fmt.Fprintf(&s, `<text x="%d" y="%d" fill="#555" font-size="10">%s</text>`+"\n", L, top+plotH+68, esc(r.Workload))
	fmt.Fprintf(&s, `<text x="%d" y="%d" fill="#555" font-size="10">%s; %.0f s wall, %.0f CPU-s</text>`+"\n", L, top+plotH+86, esc(r.Machine), r.Seconds, r.CPUSeconds)
	s.WriteString("</svg>\n")
	return s.String()
}

func fmtMs(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.1f s", v/1000)
	}
	return fmt.Sprintf("%.0f ms", v)
}

func log10(v float64) float64 { return math.Log10(v) }

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
