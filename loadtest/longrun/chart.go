package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// writeChart draws, for each result file, loaded bytes per slice and tokens
// per completion against turns (two panels, linear scales) into path.
func writeChart(path string, files []string) error {
	if len(files) == 0 {
		return errors.New("-chart needs result files as arguments")
	}
	var rs []Result
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if len(r.Windows) == 0 {
			return fmt.Errorf("%s: no windows", f)
		}
		rs = append(rs, r)
	}
	return os.WriteFile(path, []byte(chart(rs)), 0o644)
}

func chart(rs []Result) string {
	const W, H, L, top, plotW, plotH, gap = 960, 430, 80, 60, 360, 260, 120
	colors := []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd"}
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	s.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&s, `<text x="%d" y="24" font-size="15">agentslice long-running orchestrator: what one slice costs as the thread ages</text>`+"\n", L)
	maxTurn := 0
	for _, r := range rs {
		maxTurn = max(maxTurn, r.Turns)
	}
	panels := []struct {
		title string
		val   func(Window) float64
	}{
		{"bytes loaded per slice", func(w Window) float64 { return w.BytesPerSlice }},
		{"tokens sent per completion", func(w Window) float64 { return w.TokensPerCompletion }},
	}
	for p, pn := range panels {
		x0 := L + p*(plotW+gap)
		top := top
		hi := 1.0
		for _, r := range rs {
			for _, w := range r.Windows {
				hi = max(hi, pn.val(w))
			}
		}
		hi *= 1.1
		x := func(turn int) float64 { return float64(x0) + float64(turn)/float64(maxTurn)*plotW }
		y := func(v float64) float64 { return float64(top+plotH) - v/hi*plotH }
		fmt.Fprintf(&s, `<text x="%d" y="%d">%s</text>`+"\n", x0, top-10, pn.title)
		fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", x0, top+plotH, x0+plotW, top+plotH)
		fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", x0, top, x0, top+plotH)
		for i := 0; i <= 4; i++ {
			v := hi / 1.1 * float64(i) / 4
			fmt.Fprintf(&s, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#eee"/>`+"\n", x0, y(v), x0+plotW, y(v))
			fmt.Fprintf(&s, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", x0-6, y(v)+4, short(v))
		}
		for i := 0; i <= 5; i++ {
			t := maxTurn * i / 5
			fmt.Fprintf(&s, `<text x="%.0f" y="%d" text-anchor="middle">%d</text>`+"\n", x(t), top+plotH+16, t)
		}
		fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="middle">turn</text>`+"\n", x0+plotW/2, top+plotH+34)
		for i, r := range rs {
			var pts []string
			for _, w := range r.Windows {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(w.Turn), y(pn.val(w))))
			}
			fmt.Fprintf(&s, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colors[i%len(colors)], strings.Join(pts, " "))
		}
	}
	for i, r := range rs {
		name := r.Label
		if name == "" {
			name = r.Store
		}
		x, y := L+(i%2)*440, H-44+(i/2)*18
		fmt.Fprintf(&s, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/><text x="%d" y="%d">%s (%s store, %d turns, window %d tokens)</text>`+"\n",
			x, y-4, colors[i%len(colors)], x+20, y, name, r.Store, r.Turns, r.Window)
	}
	s.WriteString("</svg>\n")
	return s.String()
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
