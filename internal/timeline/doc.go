// Package timeline derives where a thread's time went from its committed
// history alone: every item's time (runtime.Item.At) and the durations
// items keep (runtime.Item.Took). It owns the derivation and its
// aggregation over many threads (Stats); it reads no store, no clock and
// no queue, and it must not: a timeline is the same on every store, after
// any restart, because it is a pure function of history.
//
// A thread's life, from its first item to the last (or to now while it
// waits), is cut into intervals that do not overlap, each with one Cause:
//
//   - queued: a message had arrived and no slice had started on it yet;
//   - generating: a model completion ran (retries included);
//   - in_slice: everything else inside slices (load, fold, synchronous
//     tools, commit);
//   - waiting_tool: an asynchronous tool call was dispatched and its
//     result had not arrived;
//   - waiting_person: the pending call asked a person (a user_choice or
//     an OAuth notice) and no result had arrived;
//   - sleeping: the pending call was a sleep;
//   - waiting_children: the thread waited (idle, or in
//     sleep_until_event_or_input) while a child it spawned had not
//     reported;
//   - idle: nothing pending: the turn was over and the thread waited for
//     someone to speak. Idle time is not part of any turn.
//
// The wait fraction is the share of a thread's active time (every cause
// but idle) spent waiting outside the runtime: (waiting_tool +
// waiting_person + sleeping + waiting_children) / active. Queueing and
// time in slices are the runtime's own, reported in the totals beside it.
//
// What history does not say is approximated, never invented: a slice ends
// at its last commit with items (the dispatch and the dedup mark after it
// count towards the wait that follows); within one commit, completions
// and synchronous tools are laid end to end ending at the commit's time;
// items written before items had durations count as in_slice of no
// length.
package timeline
