package runtime

import (
	"context"
	"fmt"
	"slices"
)

// This file drops the messages of a batch that were already processed:
// the dedup store's fast path (dropMarked) and the authoritative check
// against the input IDs history records (dedupHistory, with a map for
// large batches and a scan for small ones).

func (s *slice) dropMarked(ctx context.Context, batch []Message) ([]Message, error) {
	seen, err := s.e.Dedup.Seen(ctx, s.threadID, ids(batch))
	if err != nil {
		return nil, fmt.Errorf("runtime: checking processed IDs of thread %s: %w", s.threadID, err)
	}
	out := batch[:0:0]
	for i, m := range batch {
		if seen[i] {
			s.res.Duplicates = append(s.res.Duplicates, m.ID)
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// dedupHistory drops messages the thread has already consumed, according to
// its history and deferred events, and duplicates within the batch.
func (s *slice) dedupHistory(batch []Message) []Message {
	if len(batch) == 0 {
		return nil
	}
	if mutateSkipsConsumedCheck() {
		return batch
	}
	if len(batch) <= smallBatch {
		batch = s.dedupSmall(batch)
	} else {
		batch = s.dedupMap(batch)
	}
	if s.th.Base > 0 && len(batch) > 0 && s.th.Inherited == 0 {
		batch = s.dedupLeftOut(batch)
	}
	return batch
}

// dedupLeftOut drops the messages consumed by own items the load left out
// (those before Thread.Base): the load's answer (InputViewLoader), else
// the store's (ConsumedChecker), else the whole history's. A failure is a
// transient error of the slice (foldErr): nothing is folded.
func (s *slice) dedupLeftOut(batch []Message) []Message {
	var seen []bool
	var err error
	if s.leftOutAsked { // answered with the load
		seen = make([]bool, len(batch))
		for j := range batch {
			seen[j] = slices.Contains(s.leftOutSeen, batch[j].ID)
		}
	} else if cc, ok := s.e.History.(ConsumedChecker); ok {
		seen, err = cc.Consumed(s.ctx, s.threadID, s.th.Base, ids(batch))
	} else {
		var th *Thread
		if th, err = s.e.History.Load(s.ctx, s.threadID); err == nil {
			seen = make([]bool, len(batch))
			own := th.Own()
			for i := range own[:min(len(own), max(0, s.th.Base-th.Inherited))] {
				for j := range batch {
					seen[j] = seen[j] || (own[i].Input != "" && own[i].Input == batch[j].ID)
				}
			}
		}
	}
	if err == nil && len(seen) != len(batch) {
		err = fmt.Errorf("%d answers for %d IDs", len(seen), len(batch))
	}
	if err != nil {
		if s.foldErr == nil {
			s.foldErr = fmt.Errorf("runtime: checking the inputs thread %s consumed before its compaction point: %w", s.threadID, err)
		}
		return nil
	}
	out := batch[:0:0]
	for j, m := range batch {
		if seen[j] {
			s.res.Duplicates = append(s.res.Duplicates, m.ID)
			continue
		}
		out = append(out, m)
	}
	if len(out) == len(batch) {
		return batch
	}
	return out
}

// dedupMap is dedupHistory with a map of the batch's IDs.
func (s *slice) dedupMap(batch []Message) []Message {
	consumed := make(map[string]bool, len(batch))
	for _, m := range batch {
		consumed[m.ID] = false
	}
	own := s.th.Own()
	for i := range own {
		if in := own[i].Input; in != "" {
			if _, ok := consumed[in]; ok {
				consumed[in] = true
			}
		}
	}
	for _, d := range s.st.Deferred {
		if _, ok := consumed[d.ID]; ok {
			consumed[d.ID] = true
		}
	}
	out := batch[:0:0]
	for _, m := range batch {
		if consumed[m.ID] {
			s.res.Duplicates = append(s.res.Duplicates, m.ID)
			continue
		}
		consumed[m.ID] = true
		out = append(out, m)
	}
	return out
}

// smallBatch is the batch size up to which dedupHistory compares IDs
// directly instead of building a map (most batches hold one message).
const smallBatch = 4

// dedupSmall is dedupHistory for a batch of at most smallBatch messages,
// without allocating unless something is dropped.
func (s *slice) dedupSmall(batch []Message) []Message {
	var seen [smallBatch]bool
	own := s.th.Own()
	for i := range own {
		in := own[i].Input
		if in == "" {
			continue
		}
		for j := range batch {
			// The last bytes first: IDs share prefixes and lengths, and
			// this scan of the whole history runs for every slice.
			if id := batch[j].ID; len(id) == len(in) && id[len(id)-1] == in[len(in)-1] && id == in {
				seen[j] = true
			}
		}
	}
	for j := range batch {
		for _, d := range s.st.Deferred {
			if d.ID == batch[j].ID {
				seen[j] = true
			}
		}
		for k := range j {
			if batch[k].ID == batch[j].ID {
				seen[j] = true // a duplicate within the batch
			}
		}
	}
	out := batch
	for j := range batch {
		if seen[j] {
			out = nil
			break
		}
	}
	if out != nil {
		return out
	}
	out = batch[:0:0]
	for j, m := range batch {
		if seen[j] {
			s.res.Duplicates = append(s.res.Duplicates, m.ID)
			continue
		}
		out = append(out, m)
	}
	return out
}
