package disk

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// AgentStore is the durable runtime.AgentStore: one row per (name, hash)
// in the agent_versions table, written through the writer like the dead
// letters (rare writes: once per definition change).
type AgentStore struct{ d *DB }

var _ runtime.AgentStore = (*AgentStore)(nil)

// Agents returns the kept agent definition versions.
func (d *DB) Agents() *AgentStore { return &AgentStore{d: d} }

// PutAgents stores the versions not kept yet; a kept one keeps its first
// stored time.
func (s *AgentStore) PutAgents(ctx context.Context, versions []runtime.StoredAgent) error {
	type row struct {
		name, hash string
		def        []byte
		at         int64
	}
	rows := make([]row, 0, len(versions))
	for _, v := range versions {
		def, err := json.Marshal(&v.Definition)
		if err != nil {
			return fmt.Errorf("disk: encoding agent %s@%s: %w", v.Name, v.Hash, err)
		}
		rows = append(rows, row{v.Name, v.Hash, def, v.Stored.UnixNano()})
	}
	err := s.d.w.do(ctx, &wreq{fn: func(w *wconn) error {
		for _, r := range rows {
			if _, err := w.exec(`INSERT INTO agent_versions (name, hash, definition, stored) VALUES (?, ?, ?, ?)
				ON CONFLICT (name, hash) DO NOTHING`, r.name, r.hash, r.def, r.at); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("disk: storing agent versions: %w", err)
	}
	return nil
}

// LoadAgents returns every kept version, oldest first.
func (s *AgentStore) LoadAgents(ctx context.Context) ([]runtime.StoredAgent, error) {
	rows, err := s.d.rdb.QueryContext(ctx, `SELECT name, hash, definition, stored FROM agent_versions ORDER BY stored, name, hash`)
	if err != nil {
		return nil, fmt.Errorf("disk: reading agent versions: %w", err)
	}
	defer rows.Close()
	var out []runtime.StoredAgent
	for rows.Next() {
		var v runtime.StoredAgent
		var def []byte
		var at int64
		if err := rows.Scan(&v.Name, &v.Hash, &def, &at); err != nil {
			return nil, fmt.Errorf("disk: reading agent versions: %w", err)
		}
		if err := json.Unmarshal(def, &v.Definition); err != nil {
			return nil, fmt.Errorf("disk: agent version %s@%s holds an unreadable definition: %w", v.Name, v.Hash, err)
		}
		v.Stored = time.Unix(0, at)
		out = append(out, v)
	}
	return out, rows.Err()
}
