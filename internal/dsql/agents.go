package dsql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Agent definition versions live next to history (runtime.AgentStore):
// one row per (name, hash) in agent_versions, the definition as JSON text.
// The deploy stores the current definitions (`agentslice migrate -agents`);
// the slice function reads them when a pinned thread names a version its
// configuration does not hold.

var _ runtime.AgentStore = (*Store)(nil)

// PutAgents stores the versions not kept yet, in one transaction; a kept
// version keeps its first stored time. Two deploys racing: the loser's
// unique violation is retried, and then finds the rows there.
func (s *Store) PutAgents(ctx context.Context, versions []runtime.StoredAgent) error {
	if len(versions) == 0 {
		return nil
	}
	defs := make([]string, len(versions))
	for i, v := range versions {
		b, err := json.Marshal(&v.Definition)
		if err != nil {
			return fmt.Errorf("dsql: encoding agent %s@%s: %w", v.Name, v.Hash, err)
		}
		defs[i] = string(b)
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = s.retry.run(ctx, "agent_versions", func() (bool, error) {
			b := &pgx.Batch{}
			for i, v := range versions {
				b.Queue(insertAgentSQL, v.Name, v.Hash, defs[i], v.Stored.UnixMicro())
			}
			return classify("agent_versions", s.db.SendBatch(ctx, b).Close())
		})
		if !errors.Is(err, runtime.ErrConflict) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("dsql: storing agent versions: %w", err)
	}
	return nil
}

// LoadAgents returns every kept version, oldest first.
func (s *Store) LoadAgents(ctx context.Context) ([]runtime.StoredAgent, error) {
	var out []runtime.StoredAgent
	err := s.retry.run(ctx, "agent_versions", func() (bool, error) {
		out = out[:0]
		rows, err := s.db.Query(ctx, loadAgentsSQL)
		if err != nil {
			return retryable(err)
		}
		defer rows.Close()
		for rows.Next() {
			var v runtime.StoredAgent
			var def string
			var at int64
			if err := rows.Scan(&v.Name, &v.Hash, &def, &at); err != nil {
				return false, err
			}
			if err := json.Unmarshal([]byte(def), &v.Definition); err != nil {
				return false, fmt.Errorf("agent version %s@%s holds an unreadable definition: %w", v.Name, v.Hash, err)
			}
			v.Stored = time.UnixMicro(at)
			out = append(out, v)
		}
		return retryable(rows.Err())
	})
	if err != nil {
		return nil, fmt.Errorf("dsql: reading agent versions: %w", err)
	}
	return out, nil
}
