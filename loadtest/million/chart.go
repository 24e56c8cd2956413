package main

import (
	"fmt"
	"math"
	"strings"
)

// chart draws, against the number of agents (log scale), serve's RSS with
// that many idle durable agents (top) and the wake-up latency of random
// idle ones under the background load (bottom: p50, p99, max).
func chart(r *Result) string {
	const W, panelH, L, R = 900, 260, 90, 200
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, 2*panelH+110)
	s.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&s, `<text x="%d" y="22" font-size="15">agentslice serve, durable store: idle agents (infinity shape, %d turns each) vs RSS and wake-up latency</text>`+"\n", L, r.Turns)
	var xs []float64
	var rssMB []float64
	var p50, p99, mx []float64
	for _, st := range r.Steps {
		xs = append(xs, float64(st.Agents))
		rssMB = append(rssMB, float64(st.RSSBytes)/1e6)
		p50, p99, mx = append(p50, st.Wake.P50), append(p99, st.Wake.P99), append(mx, st.Wake.Max)
	}
	logPanel(&s, xs, [][]float64{rssMB}, []string{"serve RSS, idle (MB)"}, []string{"#1f77b4"}, 40, panelH, L, R, W, "RSS (MB)")
	logPanel(&s, xs, [][]float64{p50, p99, mx}, []string{"wake-up p50 (ms)", "wake-up p99 (ms)", "wake-up max (ms)"},
		[]string{"#2ca02c", "#ff7f0e", "#d62728"}, 60+panelH, panelH, L, R, W, "latency (ms)")
	fmt.Fprintf(&s, `<text x="%d" y="%d" fill="#555" font-size="11">%s; %s; %s</text>`+"\n", L, 2*panelH+100, r.Machine, r.Date, r.Load)
	s.WriteString("</svg>\n")
	return s.String()
}

func logPanel(s *strings.Builder, xs []float64, ys [][]float64, names, colors []string, top, h, L, R, W int, ylabel string) {
	if len(xs) == 0 {
		return
	}
	x0, x1 := math.Log10(xs[0]), math.Log10(xs[len(xs)-1])
	if x1-x0 < 1 {
		x0 = x1 - 1
	}
	hi := 0.0
	for _, y := range ys {
		for _, v := range y {
			hi = max(hi, v)
		}
	}
	hi = niceTop(hi)
	plotW, plotH := W-L-R, h-40
	px := func(x float64) float64 { return float64(L) + (math.Log10(x)-x0)/(x1-x0)*float64(plotW) }
	py := func(y float64) float64 { return float64(top+plotH) - y/hi*float64(plotH) }
	fmt.Fprintf(s, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", L, top, plotW, plotH)
	for i := 0; i <= 4; i++ {
		v := hi * float64(i) / 4
		fmt.Fprintf(s, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			L, L+plotW, py(v), py(v), L-6, py(v)+4, trimFloat(v))
	}
	for e := math.Ceil(x0); e <= x1+1e-9; e++ {
		x := math.Pow(10, e)
		fmt.Fprintf(s, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			px(x), px(x), top, top+plotH, px(x), top+plotH+16, humanCount(x))
	}
	fmt.Fprintf(s, `<text x="%d" y="%d" text-anchor="middle">agents</text>`+"\n", L+plotW/2, top+plotH+32)
	fmt.Fprintf(s, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", L-55, top+plotH/2, ylabel)
	for k, y := range ys {
		var pts []string
		for i := range xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(y[i])))
			fmt.Fprintf(s, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(xs[i]), py(y[i]), colors[k])
		}
		fmt.Fprintf(s, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), colors[k])
		fmt.Fprintf(s, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n",
			L+plotW+12, L+plotW+32, top+14+18*k, top+14+18*k, colors[k], L+plotW+38, top+18+18*k, names[k])
	}
}

func niceTop(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func humanCount(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%gM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%gk", x/1e3)
	}
	return fmt.Sprintf("%g", x)
}
