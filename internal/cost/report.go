package cost

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// usd formats a dollar amount with enough digits for small figures.
func usd(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "$0"
	case a >= 100:
		return fmt.Sprintf("$%.0f", v)
	case a >= 1:
		return fmt.Sprintf("$%.2f", v)
	case a >= 0.01:
		return fmt.Sprintf("$%.4f", v)
	default: // three significant digits, no exponent: $0.0000176
		return fmt.Sprintf("$%.*f", 2-int(math.Floor(math.Log10(a))), v)
	}
}

func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// Print writes the estimate, its inputs with their sources, the prices
// with their pages, and what the model leaves out.
func (r *Report) Print(w io.Writer) {
	wl := r.Workload
	fmt.Fprintf(w, "# agentslice cost: %s agents x %s turns per agent per day = %s turns per month\n",
		num(wl.Agents), num(wl.TurnsPerAgentPerDay), num(math.Round(r.TurnsPerMonth)))
	fmt.Fprintf(w, "# a turn: %s slices, %s completions (model tokens left out: they dominate and do not depend on the runtime)\n\n",
		num(r.SlicesPerTurn), num(r.CompletionsPerTurn))

	fmt.Fprintf(w, "%-22s %-12s %-14s %-14s %s\n", "component", "per 1k turns", "per agent/mo", "fixed/mo", "billed per turn")
	for _, c := range r.Components {
		var units []string
		for _, u := range c.Units {
			units = append(units, fmt.Sprintf("%.4g %s", u.PerTurn, u.Name))
		}
		line := fmt.Sprintf("%-22s %-12s %-14s %-14s %s", c.Name, usd(1000*c.PerTurnUSD), usd(c.PerAgentMonthUSD), usd(c.FixedMonthUSD), strings.Join(units, ", "))
		if c.Note != "" {
			line += " (" + c.Note + ")"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "%-22s %-12s %-14s %-14s\n\n", "total", usd(r.PerThousandTurnsUSD), usd(r.IdleAgentMonthUSD), usd(r.FixedMonthUSD))

	d := r.DSQL
	fmt.Fprintf(w, "Aurora DSQL per slice (AWS's metering formulas): a load reads %s B (%.4g read DPU), a commit writes %.3g rows, %s B (%.4g write DPU)\n"+
		"  and reads the thread row (%.4g read DPU), compute %.4g DPU: %.4g DPUs (transaction minimums: 2,048 B read, 1,024 B written, 128 B a row)\n\n",
		num(math.Round(d.ReadBytesPerLoad)), d.LoadRead, d.RowsPerCommit, num(math.Round(d.WriteBytesPerCommit)), d.CommitWrite, d.CommitRead, d.Compute, d.Total())

	fmt.Fprintf(w, "per 1,000 turns          %s\n", usd(r.PerThousandTurnsUSD))
	fmt.Fprintf(w, "per idle agent per month %s, %s per 1,000 idle agents (their stored history; an idle agent runs nothing)\n",
		usd(r.IdleAgentMonthUSD), usd(1000*r.IdleAgentMonthUSD))
	fmt.Fprintf(w, "fixed per month          %s (the deployment, whatever the agents do)\n", usd(r.FixedMonthUSD))
	fmt.Fprintf(w, "total per month          %s\n\n", usd(r.TotalMonthUSD))

	fmt.Fprintf(w, "always on (the conventional design: %s bytes per waiting agent in memory, %.0f%% headroom): %.2f GiB\n",
		num(wl.ConventionalBytesPerAgent), 100*wl.InstanceHeadroom, r.MemoryNeededBytes/GiB)
	for _, c := range r.AlwaysOn {
		mark := ""
		if c.Name == r.Cheapest.Name {
			mark = "  <- cheapest"
		}
		fmt.Fprintf(w, "  %3d x %-12s %5.0f GiB  $%.4f/h  %s per month%s\n", c.Count, c.Name, c.MemoryGiB, c.HourlyUSD, usd(c.MonthlyUSD), mark)
	}
	fmt.Fprintf(w, "  per agent per month, always on: %s; serverless: %s\n",
		usd(r.Cheapest.MonthlyUSD/wl.Agents), usd(r.TotalMonthUSD/wl.Agents))
	switch be := r.BreakEvenTurnsPerDay; {
	case math.IsInf(be, 1):
		fmt.Fprintln(w, "  break-even: none; the serverless deployment costs less at any rate of turns")
	case be == 0:
		fmt.Fprintln(w, "  break-even: none; the serverless fixed and idle costs alone exceed the instances'")
	default:
		fmt.Fprintf(w, "  break-even: %.4g turns per agent per day for these %s agents (serverless costs less below it)\n", be, num(wl.Agents))
	}
	fmt.Fprintln(w, "  (memory only: the instance's CPU, its durable store and a second instance for availability are left out)")

	fmt.Fprintln(w, "\ninputs:")
	for _, f := range wl.Fields() {
		fmt.Fprintf(w, "  %-30s %-10s %s\n", f.Name, num(*f.V), r.Sources[f.Name])
	}
	p := r.Prices
	fmt.Fprintf(w, "\nprices (USD, %s, recorded %s, %s):\n", p.Region, p.Date, p.Source)
	for _, f := range p.fields() {
		line := fmt.Sprintf("  %-30s %-12.6g %s", f.name, *f.v, f.page)
		if why, ok := Unconfirmed[f.name]; ok && strings.HasPrefix(p.Source, "built in") {
			line += "  NOT CONFIRMED on AWS's page: " + why
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "note: %s; free tiers are not applied.\n", PricesNote)
	fmt.Fprintln(w, "left out: model tokens, data transfer, the stack's CloudWatch alarms and its callback-key secret (fixed, a few dollars a month), the tool servers")
}
