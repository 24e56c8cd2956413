package main

import (
	"fmt"
	"math"
	"strings"
)

type refLine struct {
	name  string
	per   float64 // bytes per agent
	color string
	dash  string // SVG stroke-dasharray; "" is solid
}

// chart draws resident agents against RSS as an SVG in two panels: the
// top one with the slopes of Infinity's published figures and of the
// conventional baseline for reference, the bottom one zoomed in on the
// measured agentslice line so its shape can be seen. The legend says
// which lines are measured here, which are published figures drawn as
// slopes, and which are extrapolated from a smaller measurement.
func chart(r *Result, samples []sample) string {
	const W, panelH, L, R = 980, 300, 100, 380
	lines := []refLine{
		{"Infinity, published: 154 KiB/agent (slope)", 154 * 1024, "#d62728", "6,4"},
		{"Infinity, published later: 100 KiB/agent (slope)", 100 * 1024, "#ff7f0e", "6,4"},
	}
	if r.ConventionalBytesPerAgt > 0 {
		name := fmt.Sprintf("conventional design, %.1f KiB/agent", float64(r.ConventionalBytesPerAgt)/1024)
		if r.ConventionalAgents > 0 && r.ConventionalAgents < r.Agents {
			name += fmt.Sprintf("\n(measured at %d agents, extrapolated)", r.ConventionalAgents)
		} else {
			name += "\n(measured here)"
		}
		lines = append(lines, refLine{name, float64(r.ConventionalBytesPerAgt), "#7f7f7f", "2,3"})
	}
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, 2*panelH+90)
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&s, `<text x="%d" y="22" font-size="15">agentslice density, %s profile, %d turns per agent: idle agents vs resident memory</text>`+"\n", L, r.Profile, r.Turns)
	maxR := float64(r.RSSBytes)
	for _, l := range lines {
		maxR = max(maxR, float64(r.BaselineRSSBytes)+l.per*float64(r.Agents))
	}
	panel(&s, r, samples, lines, 40, panelH, L, R, W, maxR, "with published references")
	panel(&s, r, samples, nil, 40+panelH+20, panelH, L, R, W, float64(r.RSSBytes)*1.1, "zoomed in on agentslice")
	fmt.Fprintf(&s, `<text x="%d" y="%d" fill="#555" font-size="11">%s; %d completions at %.0f/s; RSS after GC + FreeOSMemory per idle wave</text>`+"\n",
		L, 2*panelH+80, r.Machine, r.Completions, r.CompletionsPerSec)
	s.WriteString("</svg>\n")
	return s.String()
}

// niceTicks returns round tick values (1, 2 or 5 times a power of ten)
// from 0 to at least hi, about n of them, and the new top.
func niceTicks(hi float64, n int) ([]float64, float64) {
	if hi <= 0 || math.IsNaN(hi) || math.IsInf(hi, 0) {
		return []float64{0, 1}, 1
	}
	raw := hi / float64(n)
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := pow * 10
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	top := math.Ceil(hi/step) * step
	var ticks []float64
	for v := 0.0; v <= top+step/2; v += step {
		ticks = append(ticks, v)
	}
	return ticks, top
}

func tickLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

func panel(s *strings.Builder, r *Result, samples []sample, lines []refLine, top, h, L, R, W int, maxR float64, title string) {
	const B = 40
	xt, maxA := niceTicks(float64(r.Agents), 5)
	yt, maxMB := niceTicks(maxR/1e6, 4)
	maxR = maxMB * 1e6
	x := func(a float64) float64 { return float64(L) + a/maxA*float64(W-L-R) }
	y := func(b float64) float64 { return float64(top+h-B) - b/maxR*float64(h-B-20) }
	fmt.Fprintf(s, `<text x="%d" y="%d" font-size="12" fill="#333">%s</text>`+"\n", L, top+12, title)
	fmt.Fprintf(s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, top+h-B, W-R, top+h-B)
	fmt.Fprintf(s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, top+20, L, top+h-B)
	for _, a := range xt {
		fmt.Fprintf(s, `<text x="%.0f" y="%d" text-anchor="middle">%s</text>`+"\n", x(a), top+h-B+16, tickLabel(a))
	}
	for _, mb := range yt {
		fmt.Fprintf(s, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", L-6, y(mb*1e6)+4, tickLabel(mb))
		fmt.Fprintf(s, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#eee"/>`+"\n", L, y(mb*1e6), W-R, y(mb*1e6))
	}
	fmt.Fprintf(s, `<text x="%d" y="%d" text-anchor="middle">idle agents</text>`+"\n", (L+W-R)/2, top+h-B+32)
	cy := top + 20 + (h-B-20)/2
	fmt.Fprintf(s, `<text x="%d" y="%d" text-anchor="middle" transform="rotate(-90 %d %d)">resident memory (MB)</text>`+"\n", L-56, cy, L-56, cy)
	legend := top + 34
	entry := func(color, dash, width, text string) {
		dashAttr := ""
		if dash != "" {
			dashAttr = ` stroke-dasharray="` + dash + `"`
		}
		fmt.Fprintf(s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%s"%s/>`+"\n", W-R+10, legend-4, W-R+40, legend-4, color, width, dashAttr)
		for i, part := range strings.Split(text, "\n") {
			if i > 0 {
				legend += 15
			}
			fmt.Fprintf(s, `<text x="%d" y="%d" fill="#222">%s</text>`+"\n", W-R+46, legend, part)
		}
		legend += 18
	}
	for _, l := range lines {
		fmt.Fprintf(s, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-dasharray="%s" stroke-width="2"/>`+"\n",
			x(0), y(float64(r.BaselineRSSBytes)), x(float64(r.Agents)), y(float64(r.BaselineRSSBytes)+l.per*float64(r.Agents)), l.color, l.dash)
	}
	pts := []string{fmt.Sprintf("%.1f,%.1f", x(0), y(float64(r.BaselineRSSBytes)))}
	for _, p := range samples {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(p.agents)), y(float64(p.rss))))
	}
	fmt.Fprintf(s, `<polyline points="%s" fill="none" stroke="#1f77b4" stroke-width="2.5"/>`+"\n", strings.Join(pts, " "))
	entry("#1f77b4", "", "2.5", fmt.Sprintf("agentslice, measured here: %d B/agent", r.BytesPerIdleAgent))
	for _, l := range lines {
		entry(l.color, l.dash, "2", l.name)
	}
}
