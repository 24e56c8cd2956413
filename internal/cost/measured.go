package cost

import (
	"encoding/json"
	"fmt"
	"io"
)

// DensityMeasured is the part of a density benchmark result
// (loadtest/density, density-PROFILE-AGENTS.json) the model takes.
type DensityMeasured struct {
	Profile                 string `json:"profile"`
	Agents                  int    `json:"agents"`
	Turns                   int    `json:"turns"`
	HistoryBytesPerAgentRaw int64  `json:"history_bytes_per_agent_raw"`
	ConventionalBytesPerAgt int64  `json:"conventional_bytes_per_waiting_agent"`
	ConventionalAgents      int    `json:"conventional_agents_measured"`
}

// ReadDensity decodes a density result and checks it holds what the model
// takes from it.
func ReadDensity(r io.Reader, source string) (DensityMeasured, error) {
	var m DensityMeasured
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return m, fmt.Errorf("cost: density result %s: %w", source, err)
	}
	switch {
	case m.ConventionalBytesPerAgt <= 0:
		return m, fmt.Errorf("cost: density result %s: conventional_bytes_per_waiting_agent is missing (run it without -baseline-agents -1)", source)
	case m.Turns <= 0 || m.HistoryBytesPerAgentRaw <= 0:
		return m, fmt.Errorf("cost: density result %s: turns and history_bytes_per_agent_raw must be positive", source)
	}
	return m, nil
}

// ApplyDensity sets the conventional design's bytes per waiting agent and
// the history bytes per turn from a density result.
func ApplyDensity(w *Workload, src Sources, m DensityMeasured, source string) {
	w.ConventionalBytesPerAgent = float64(m.ConventionalBytesPerAgt)
	src["conventional_bytes_per_agent"] = fmt.Sprintf("measured: %s (%s profile, %d agents waiting)", source, m.Profile, m.ConventionalAgents)
	w.HistoryBytesPerTurn = float64(m.HistoryBytesPerAgentRaw) / float64(m.Turns)
	src["history_bytes_per_turn"] = fmt.Sprintf("measured: %s (%d raw bytes per agent / %d turns)", source, m.HistoryBytesPerAgentRaw, m.Turns)
}

// ReadStorage decodes a storage load test result.
func ReadStorage(r io.Reader, source string) (StorageMeasured, error) {
	var m StorageMeasured
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return m, fmt.Errorf("cost: storage result %s: %w", source, err)
	}
	if m.Slices <= 0 {
		return m, fmt.Errorf("cost: storage result %s: Slices is %d; not a storage load test result", source, m.Slices)
	}
	return m, nil
}

// ApplyStorage checks the model's requests per slice against a storage
// result (CheckStorage) and, if they agree, takes the measured round
// trips per slice (connection setup included) and thread row bytes as the
// model's inputs. The loads' and commits' other bytes describe the load
// test's short threads, not the workload's: the model derives them from
// the history figures.
func ApplyStorage(w *Workload, src Sources, m StorageMeasured, source string) error {
	if err := CheckStorage(m); err != nil {
		return err
	}
	from := fmt.Sprintf("measured: %s (%d threads x %d turns, %d slices)", source, m.Threads, m.Turns, m.Slices)
	w.SQLRoundTripsPerSlice = m.PGRoundTripsPerSlice
	src["sql_round_trips_per_slice"] = from
	w.DynamoWritesPerSlice = m.DynamoRoundTripsPerSlice - m.SeenPerSlice
	src["dynamodb_writes_per_slice"] = from
	w.DynamoReadsPerSlice = m.SeenPerSlice
	src["dynamodb_reads_per_slice"] = from
	w.DSQLThreadRowBytes = m.DSQL.ThreadRowBytes
	src["dsql_thread_row_bytes"] = from
	return nil
}
