package server

import (
	"time"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Limits bound what the server does and accepts. Zero means the default.
type Limits struct {
	// MaxCompletions caps one slice's completions. Default 8.
	MaxCompletions int `json:"max_completions,omitempty"`
	// ModelAttempts is how often one completion is tried. Default 4.
	ModelAttempts int `json:"model_attempts,omitempty"`
	// MaxSubscriptions caps the subscriptions one thread keeps active at
	// once (runtime.Limits.MaxSubscriptions). Default 0: no cap.
	MaxSubscriptions int `json:"max_subscriptions,omitempty"`
	// MaxChildren caps the children one thread has alive at once
	// (runtime.Limits.MaxChildren). Default 0: no cap.
	MaxChildren int `json:"max_children,omitempty"`
	// MaxInheritedDepth caps how many uncompacted ancestors a thread's
	// view reaches (runtime.Limits.MaxInheritedDepth): a deeper thread is
	// folded into one summary. Default 8 (MaxInheritedDepthDefault).
	MaxInheritedDepth int `json:"max_inherited_depth,omitempty"`
	// SliceAttempts is how often a failing slice is retried before its
	// messages go to the dead letters. Default 5.
	SliceAttempts int `json:"slice_attempts,omitempty"`
	// MaxBodyBytes caps a request body of the API. Default 1 MiB.
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	// EventBuffer is how many events one stream subscriber may lag behind
	// before it is dropped. Default 256.
	EventBuffer int `json:"event_buffer,omitempty"`
	// KeepAlive is the interval of keep-alive comments on event streams.
	// Default 15s.
	KeepAlive string `json:"keep_alive,omitempty"`
	// MaxThreadsListed caps the threads GET /threads returns. Default 10000.
	MaxThreadsListed int `json:"max_threads_listed,omitempty"`
	// ReadTimeout bounds reading one request, body included: a stalled
	// upload is cut after it. Default 30s.
	ReadTimeout string `json:"read_timeout,omitempty"`
	// ProviderWait is a thread's first wait for its model provider when
	// every attempt of a completion failed with a retryable error (refused,
	// 5xx, 429); the waits double up to ProviderWaitMax, at least the
	// provider's Retry-After. Default 30s and 15m.
	ProviderWait    string `json:"provider_wait,omitempty"`
	ProviderWaitMax string `json:"provider_wait_max,omitempty"`
	// ProviderMaxWait is how long a thread waits for its provider in all
	// before the completion fails for good (an error in history). Default
	// 24h.
	ProviderMaxWait string `json:"provider_max_wait,omitempty"`
	// TimerHorizon is how far ahead the sqlite store arms timers (sleeps'
	// wake-ups, liveness checks, provider waits) in memory; one due later
	// is only its row until it comes that near. "off" arms every timer at
	// start. Default 1m.
	TimerHorizon string `json:"timer_horizon,omitempty"`
	// CheckpointRecords is how many journal records the sqlite store
	// writes before a checkpoint copies them into its database (or 64 MiB
	// of them, whichever comes first). It bounds the time to ready after a
	// crash, which replays every record since the last checkpoint (up to
	// about twice this many); a smaller value checkpoints more often.
	// Default 25000 (disk.DefaultSegmentRecords).
	CheckpointRecords int `json:"checkpoint_records,omitempty"`
}

// MaxInheritedDepthDefault is limits.max_inherited_depth's default.
const MaxInheritedDepthDefault = 8

// Freeze configures the periodic compression of idle threads' history.
type Freeze struct {
	Disabled bool `json:"disabled,omitempty"`
	// Every is how often the store is swept. Default 30s.
	Every string `json:"every,omitempty"`
	// Idle is how long a thread must not have committed to be frozen.
	// Default 60s.
	Idle string `json:"idle,omitempty"`
}

// Compaction configures context compaction.
type Compaction struct {
	Disabled bool `json:"disabled,omitempty"`
	// Threshold is the fraction of the context window at which a thread is
	// summarised. Default 0.8.
	Threshold float64 `json:"threshold,omitempty"`
}

// resolveLimits applies the defaults of limits, freeze and compaction and
// checks their values.
func (c *Config) resolveLimits(s *settings) error {
	bad := configErr
	var err error
	l := c.Limits
	for _, v := range []struct {
		field string
		n     int64
	}{
		{"limits.max_completions", int64(l.MaxCompletions)}, {"limits.model_attempts", int64(l.ModelAttempts)},
		{"limits.slice_attempts", int64(l.SliceAttempts)}, {"limits.max_body_bytes", l.MaxBodyBytes},
		{"limits.event_buffer", int64(l.EventBuffer)}, {"limits.max_threads_listed", int64(l.MaxThreadsListed)},
		{"limits.max_subscriptions", int64(l.MaxSubscriptions)}, {"limits.max_children", int64(l.MaxChildren)},
		{"limits.max_inherited_depth", int64(l.MaxInheritedDepth)}, {"limits.checkpoint_records", int64(l.CheckpointRecords)},
	} {
		if v.n < 0 {
			return bad(v.field, "must not be negative (got %d; 0 means the default)", v.n)
		}
	}
	s.maxBody, s.eventBuffer, s.maxListed = orDefault(l.MaxBodyBytes, 1<<20), int(orDefault(int64(l.EventBuffer), 256)),
		int(orDefault(int64(l.MaxThreadsListed), 10000))
	s.checkpointRecords = int(orDefault(int64(l.CheckpointRecords), disk.DefaultSegmentRecords))
	if s.keepAlive, err = duration("limits.keep_alive", l.KeepAlive, 15*time.Second); err != nil {
		return err
	}
	if s.readTimeout, err = duration("limits.read_timeout", l.ReadTimeout, 30*time.Second); err != nil {
		return err
	}
	if l.TimerHorizon != "off" {
		if s.timerHorizon, err = duration("limits.timer_horizon", l.TimerHorizon, time.Minute); err != nil {
			return err
		}
	}
	pw := &s.providerWait
	if pw.First, err = duration("limits.provider_wait", l.ProviderWait, runtime.ProviderWaitFirstDefault); err != nil {
		return err
	}
	if pw.Interval, err = duration("limits.provider_wait_max", l.ProviderWaitMax, runtime.ProviderWaitIntervalDefault); err != nil {
		return err
	}
	if pw.MaxWait, err = duration("limits.provider_max_wait", l.ProviderMaxWait, runtime.ProviderWaitMaxDefault); err != nil {
		return err
	}
	if s.freezeEvery, err = duration("freeze.every", c.Freeze.Every, 30*time.Second); err != nil {
		return err
	}
	if s.freezeIdle, err = duration("freeze.idle", c.Freeze.Idle, 60*time.Second); err != nil {
		return err
	}
	if s.backfillPause, err = duration("backfill.pause", c.Backfill.Pause, backfillPauseDefault); err != nil {
		return err
	}
	if t := c.Compaction.Threshold; t < 0 || t >= 1 {
		return bad("compaction.threshold", "%v is not a fraction between 0 and 1 (0 means the default 0.8)", t)
	}
	return nil
}
