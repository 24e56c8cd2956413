package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printTable prints each system's figures and their ratio to agentslice's
// durable row (agentslice-sqlite; the memory row if that did not run),
// marking where the peer does better.
func printTable(w io.Writer, rows []row) {
	var ref *row
	for _, name := range []string{"agentslice-sqlite", "agentslice-memory"} {
		for i := range rows {
			if rows[i].System == name && rows[i].Status == "ok" {
				ref = &rows[i]
				break
			}
		}
		if ref != nil {
			break
		}
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	if ref != nil {
		fmt.Fprintf(tw, "\nratios to %s (x = peer / agentslice; * = the peer does better)\n", ref.System)
	}
	fmt.Fprintln(tw, "system\tstatus\tbytes/waiting agent\tcompletions/s\tCPU ms/completion\twake p50/p99 ms (ratio of p50)\tdisk bytes/agent\tlargest N within limit\t")
	var notes []string
	for _, r := range rows {
		if r.Status != "ok" {
			fmt.Fprintf(tw, "%s\t%s (below)\t\t\t\t\t\t\t\n", r.System, r.Status)
			notes = append(notes, fmt.Sprintf("%s %s: %s", r.System, r.Status, r.Reason))
			continue
		}
		wake := "n/a"
		if r.WakeSamples > 0 {
			wake = fmt.Sprintf("%.1f / %.1f%s", r.WakeP50Ms, r.WakeP99Ms, ratio(ref, r.WakeP50Ms, refVal(ref, func(x *row) float64 { return x.WakeP50Ms }), false))
		}
		largestN := "not ramped"
		if l := r.Largest; l != nil {
			largestN = fmt.Sprintf("%d (%s)", l.Agents, l.Stop)
			if l.Extrapolated > 0 {
				largestN = fmt.Sprintf("%d reached, ~%d at the limit (%s)", l.Agents, l.Extrapolated, l.Stop)
			}
		}
		fmt.Fprintf(tw, "%s\tok\t%d%s\t%.0f%s\t%.3f%s\t%s\t%d%s\t%s\t\n", r.System,
			r.BytesPerWaitingAgent, ratio(ref, float64(r.BytesPerWaitingAgent), refVal(ref, func(x *row) float64 { return float64(x.BytesPerWaitingAgent) }), false),
			r.CompletionsPerSec, ratio(ref, r.CompletionsPerSec, refVal(ref, func(x *row) float64 { return x.CompletionsPerSec }), true),
			r.CPUMsPerCompletion, ratio(ref, r.CPUMsPerCompletion, refVal(ref, func(x *row) float64 { return x.CPUMsPerCompletion }), false),
			wake,
			r.DiskBytesPerAgent, ratio(ref, float64(r.DiskBytesPerAgent), refVal(ref, func(x *row) float64 { return float64(x.DiskBytesPerAgent) }), false),
			largestN)
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

func refVal(ref *row, f func(*row) float64) float64 {
	if ref == nil {
		return 0
	}
	return f(ref)
}

// ratio formats " (N.Nx)" with a star where the peer does better (higher
// is better when higherBetter); nothing when there is no reference figure.
func ratio(ref *row, v, base float64, higherBetter bool) string {
	if ref == nil || base <= 0 || v <= 0 {
		return ""
	}
	x := v / base
	better := (higherBetter && x > 1) || (!higherBetter && x < 1)
	star := ""
	if better {
		star = "*"
	}
	return fmt.Sprintf(" (%.2fx%s)", x, star)
}
