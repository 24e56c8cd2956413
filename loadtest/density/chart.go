package main

import (
	"fmt"
	"strings"
)

// chart draws resident agents against RSS as an SVG, with the slopes of
// Infinity's published figures and of the conventional baseline drawn for
// reference.
func chart(r *Result, samples []sample) string {
	const W, H, L, B, T, R = 760, 440, 80, 50, 40, 200
	maxA := float64(r.Agents)
	lines := []struct {
		name  string
		per   float64
		color string
	}{
		{"Infinity, published (154 KB/agent)", 154e3, "#d62728"},
		{"Infinity, later (100 KB/agent)", 100e3, "#ff7f0e"},
	}
	if r.ConventionalBytesPerAgt > 0 {
		lines = append(lines, struct {
			name  string
			per   float64
			color string
		}{fmt.Sprintf("conventional design (%d KB/agent)", r.ConventionalBytesPerAgt/1000), float64(r.ConventionalBytesPerAgt), "#7f7f7f"})
	}
	maxR := float64(r.RSSBytes)
	for _, l := range lines {
		maxR = max(maxR, float64(r.BaselineRSSBytes)+l.per*maxA)
	}
	x := func(a float64) float64 { return L + a/maxA*float64(W-L-R) }
	y := func(b float64) float64 { return float64(H-B) - b/maxR*float64(H-B-T) }
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&s, `<text x="%d" y="22" font-size="14">agentslice density (%s profile, %d turns): resident agents vs RSS</text>`+"\n", L, r.Profile, r.Turns)
	fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, H-B, W-R, H-B)
	fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, T, L, H-B)
	for i := 0; i <= 4; i++ {
		a := maxA * float64(i) / 4
		b := maxR * float64(i) / 4
		fmt.Fprintf(&s, `<text x="%.0f" y="%d" text-anchor="middle">%.0f</text>`+"\n", x(a), H-B+18, a)
		fmt.Fprintf(&s, `<text x="%d" y="%.0f" text-anchor="end">%.0f MB</text>`+"\n", L-6, y(b)+4, b/1e6)
		fmt.Fprintf(&s, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#eee"/>`+"\n", L, y(b), W-R, y(b))
	}
	fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="middle">idle agents</text>`+"\n", (L+W-R)/2, H-12)
	legend := T + 10
	for _, l := range lines {
		fmt.Fprintf(&s, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-dasharray="6,4" stroke-width="2"/>`+"\n",
			x(0), y(float64(r.BaselineRSSBytes)), x(maxA), y(float64(r.BaselineRSSBytes)+l.per*maxA), l.color)
		fmt.Fprintf(&s, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", W-R+8, legend, l.color, l.name)
		legend += 18
	}
	var pts []string
	for _, p := range samples {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(p.agents)), y(float64(p.rss))))
	}
	fmt.Fprintf(&s, `<polyline points="%s" fill="none" stroke="#1f77b4" stroke-width="2.5"/>`+"\n", strings.Join(pts, " "))
	fmt.Fprintf(&s, `<text x="%d" y="%d" fill="#1f77b4">agentslice, measured (%d B/agent)</text>`+"\n", W-R+8, legend, r.BytesPerIdleAgent)
	fmt.Fprintf(&s, `<text x="%d" y="%d" fill="#555" font-size="10">%s</text>`+"\n", L, H-28+22, r.Machine)
	s.WriteString("</svg>\n")
	return s.String()
}
