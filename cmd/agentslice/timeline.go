package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentslice/agentslice/client"
)

// runTimeline prints where a thread's time went (GET /threads/{id}/timeline).
func runTimeline(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("timeline", "timeline [-server URL] [-json] [-intervals] THREAD", stderr)
	var sf serverFlags
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print the server's answer as JSON")
	intervals := fs.Bool("intervals", false, "print every interval, not only the totals")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	thread, err := oneThread(fs.Args(), "read")
	if err != nil {
		return err
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	tl, err := c.Timeline(ctx, thread)
	if err != nil {
		return explain(err, thread)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(tl)
	}
	head := fmt.Sprintf("thread %s: wait fraction %s of %s active, %d turns", tl.ThreadID, percent(tl.WaitFraction),
		seconds(active(tl.Totals)), len(tl.Turns))
	if tl.Agent != "" {
		head += ", agent " + tl.Agent
	}
	fmt.Fprintln(stdout, head)
	printTotals(stdout, tl.Totals)
	fmt.Fprintf(stdout, "queue delay  %s\ntool latency %s\n", quantiles(tl.QueueDelay), quantiles(tl.ToolLatency))
	if *intervals {
		for _, iv := range tl.Intervals {
			what := iv.Cause
			if iv.Tool != "" {
				what += " " + iv.Tool
			}
			if iv.Open {
				what += " (still)"
			}
			fmt.Fprintf(stdout, "  %s  %9s  %s\n", iv.Start.UTC().Format("2006-01-02 15:04:05.000"), seconds(iv.End.Sub(iv.Start).Seconds()), what)
		}
	}
	return nil
}

// runStats prints the figures over every thread (GET /stats).
func runStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stats", "stats [-server URL] [-by agent|tool] [-json]", stderr)
	var sf serverFlags
	sf.register(fs)
	by := fs.String("by", "agent", "group by agent or by tool")
	asJSON := fs.Bool("json", false, "print the server's answer as JSON")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("stats takes no arguments (got %q)", fs.Args())
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	st, err := c.Stats(ctx, *by)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	fmt.Fprintf(stdout, "%d threads: wait fraction %s of %s active; queue delay %s; tool latency %s\n", st.Threads,
		percent(st.WaitFraction), seconds(active(st.Totals)), quantiles(st.QueueDelay), quantiles(st.ToolLatency))
	if st.Truncated {
		fmt.Fprintln(stdout, "(more threads exist than a listing reads: these figures are of the first ones)")
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	cols := []string{strings.ToUpper(st.By), "THREADS", "WAIT"}
	for _, c := range client.Causes {
		cols = append(cols, strings.ToUpper(c))
	}
	cols = append(cols, "QUEUE p50/p99", "TOOL p50/p99")
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, g := range st.Groups {
		row := []string{g.Key, fmt.Sprint(g.Threads), percent(g.WaitFraction)}
		for _, c := range client.Causes {
			row = append(row, seconds(g.Totals[c]))
		}
		row = append(row, p50p99(g.QueueDelay), p50p99(g.ToolLatency))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func printTotals(w io.Writer, totals map[string]float64) {
	act := active(totals)
	for _, c := range client.Causes {
		s := totals[c]
		if s == 0 {
			continue
		}
		share := ""
		if c != client.CauseIdle && act > 0 {
			share = percent(s / act)
		}
		fmt.Fprintf(w, "  %-17s %9s  %6s\n", c, seconds(s), share)
	}
}

func active(totals map[string]float64) float64 {
	var a float64
	for c, s := range totals {
		if c != client.CauseIdle {
			a += s
		}
	}
	return a
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// seconds writes s seconds as a duration rounded to the millisecond.
func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}

func quantiles(q client.Quantiles) string {
	if q.Count == 0 {
		return "none"
	}
	return fmt.Sprintf("p50 %s, p99 %s (%d)", seconds(q.P50), seconds(q.P99), q.Count)
}

func p50p99(q client.Quantiles) string {
	if q.Count == 0 {
		return "-"
	}
	return seconds(q.P50) + "/" + seconds(q.P99)
}
