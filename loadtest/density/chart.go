package main

import (
	"fmt"
	"strings"
)

type refLine struct {
	name  string
	per   float64 // bytes per agent
	color string
}

// chart draws resident agents against RSS as an SVG in two panels: the
// top one with the slopes of Infinity's published figures and of the
// conventional baseline for reference, the bottom one zoomed in on the
// measured agentslice line so its shape can be seen.
func chart(r *Result, samples []sample) string {
	const W, panelH, L, R = 900, 300, 90, 300
	lines := []refLine{
		{"Infinity, published (154 KiB/agent)", 154 * 1024, "#d62728"},
		{"Infinity, later (100 KiB/agent)", 100 * 1024, "#ff7f0e"},
	}
	if r.ConventionalBytesPerAgt > 0 {
		lines = append(lines, refLine{fmt.Sprintf("conventional design (%.1f KiB/agent)", float64(r.ConventionalBytesPerAgt)/1024),
			float64(r.ConventionalBytesPerAgt), "#7f7f7f"})
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

func panel(s *strings.Builder, r *Result, samples []sample, lines []refLine, top, h, L, R, W int, maxR float64, title string) {
	const B = 40
	maxA := float64(r.Agents)
	x := func(a float64) float64 { return float64(L) + a/maxA*float64(W-L-R) }
	y := func(b float64) float64 { return float64(top+h-B) - b/maxR*float64(h-B-20) }
	fmt.Fprintf(s, `<text x="%d" y="%d" font-size="12" fill="#333">%s</text>`+"\n", L, top+12, title)
	fmt.Fprintf(s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, top+h-B, W-R, top+h-B)
	fmt.Fprintf(s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, top+20, L, top+h-B)
	for i := 0; i <= 4; i++ {
		a := maxA * float64(i) / 4
		b := maxR * float64(i) / 4
		fmt.Fprintf(s, `<text x="%.0f" y="%d" text-anchor="middle">%.0f</text>`+"\n", x(a), top+h-B+16, a)
		fmt.Fprintf(s, `<text x="%d" y="%.0f" text-anchor="end">%.0f MB</text>`+"\n", L-6, y(b)+4, b/1e6)
		fmt.Fprintf(s, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#eee"/>`+"\n", L, y(b), W-R, y(b))
	}
	fmt.Fprintf(s, `<text x="%d" y="%d" text-anchor="middle">idle agents</text>`+"\n", (L+W-R)/2, top+h-B+32)
	legend := top + 34
	for _, l := range lines {
		fmt.Fprintf(s, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-dasharray="6,4" stroke-width="2"/>`+"\n",
			x(0), y(float64(r.BaselineRSSBytes)), x(maxA), y(float64(r.BaselineRSSBytes)+l.per*maxA), l.color)
		fmt.Fprintf(s, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", W-R+10, legend, l.color, l.name)
		legend += 18
	}
	pts := []string{fmt.Sprintf("%.1f,%.1f", x(0), y(float64(r.BaselineRSSBytes)))}
	for _, p := range samples {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(p.agents)), y(float64(p.rss))))
	}
	fmt.Fprintf(s, `<polyline points="%s" fill="none" stroke="#1f77b4" stroke-width="2.5"/>`+"\n", strings.Join(pts, " "))
	fmt.Fprintf(s, `<text x="%d" y="%d" fill="#1f77b4">agentslice, measured (%d B/agent)</text>`+"\n", W-R+10, legend, r.BytesPerIdleAgent)
}
