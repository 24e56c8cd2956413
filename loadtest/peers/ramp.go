package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// largest is what the ramp reached: Agents waiting at once (the measured
// run's, now idle, included) with the processes holding Bytes (sum of Pss,
// sampled right after each wave, without a settle, so an upper bound),
// and why it stopped. Extrapolated is the N at which the limit would be
// reached at the ramp's last bytes per agent, for a ramp stopped by time.
type largest struct {
	Agents       int     `json:"agents"`
	Bytes        int64   `json:"bytes"`
	LimitBytes   int64   `json:"limit_bytes"`
	Stop         string  `json:"stop"`
	Extrapolated int64   `json:"extrapolated_agents_at_limit,omitempty"`
	Waves        int     `json:"waves"`
	Seconds      float64 `json:"seconds"`
}

// rampUp adds waves of agents (c.turns turns each, left waiting) to the
// system while its processes stay within c.limit and c.ramp has not
// passed. Each wave is sized from the bytes per agent seen so far (at
// most 90% of the headroom, at most twice the last wave) and from the
// time left at the measured completions per second. A wave that passes
// the limit stops the ramp; its agents are not counted.
func rampUp(ctx context.Context, c config, p peer, cb *callbacks, base int64, cps float64) *largest {
	t0 := time.Now()
	deadline := t0.Add(c.ramp)
	l := &largest{Agents: c.agents, LimitBytes: c.limit}
	held := memOf(p.pids()).PSS
	step := c.agents
	perTurn := float64(2*c.turns - 1)
	for {
		l.Bytes = held
		per := float64(max(held-base, 1)) / float64(l.Agents)
		l.Extrapolated = int64(float64(c.limit-base) / per)
		left := time.Until(deadline).Seconds()
		step = min(2*step, int(0.9*float64(c.limit-held)/per), int(left*cps/perTurn))
		if step < max(10, l.Agents/100) {
			if left*cps/perTurn < float64(max(10, l.Agents/100)) {
				l.Stop = fmt.Sprintf("time: the %s ramp ended", c.ramp)
			} else {
				l.Stop = "memory: the next wave would pass the limit"
				l.Extrapolated = 0
			}
			break
		}
		fmt.Fprintf(os.Stderr, "peers: %s: ramp wave %d: +%d agents (%d waiting, %d MiB held)\n", p.name(), l.Waves+1, step, l.Agents, held>>20)
		_, err := drive(ctx, p, cb, fmt.Sprintf("ramp%d", l.Waves), step, c.turns, c.conc, c.timeout, c.limit)
		if errors.Is(err, errOverLimit) {
			l.Stop = "memory: a wave passed the limit (" + err.Error() + ")"
			l.Extrapolated = 0
			break
		}
		if err != nil {
			l.Stop = "error: " + err.Error()
			break
		}
		l.Waves++
		l.Agents += step
		held = memOf(p.pids()).PSS
		if held > c.limit {
			l.Stop = "memory: passed the limit after the wave"
			l.Agents -= step
			l.Extrapolated = 0
			break
		}
	}
	l.Seconds = time.Since(t0).Seconds()
	return l
}
