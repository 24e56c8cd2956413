// Package disk is the durable store of the embedded system (`agentslice
// serve`): threads' history and state, processed message IDs, the inbox of
// accepted messages, the armed timers and the dead letters, in one SQLite database file under a
// data directory, through modernc.org/sqlite (SQLite translated to Go: no
// cgo, so `go build` stays one command), with a journal of its own in front
// of it for the writes of the hot path.
//
// # Why SQLite (modernc.org/sqlite)
//
// The candidates were SQLite (modernc.org/sqlite, ncruces/go-sqlite3),
// Pebble and bbolt. Pebble compiles DataDog/zstd's C code whenever cgo is
// enabled (it is by default wherever a C compiler exists), so it is not pure
// Go in an ordinary build. bbolt reads through a shared mmap of the whole
// file, so every page a write touched counts in the process's resident set
// (the density benchmark reads /proc/self/statm): with 80,000 agents × 25 KB
// that is up to 2 GB of "RSS" for idle agents; it also rewrites a 4 KB page
// per touched key and never compresses. SQLite reads with pread into a
// bounded page cache, writes a WAL, is the most tested embedded database
// there is, and gives users tools they already know: the sqlite3 shell to
// look inside, `VACUUM INTO` / `.backup` for an online backup,
// `PRAGMA integrity_check`. modernc.org/sqlite over ncruces because it is a
// plain database/sql driver with no WebAssembly runtime in between.
//
// # Durability: a journal in front of the database (the fsync policy)
//
// History commits and inbox changes are the hot path (several per model
// completion), so they do not go to SQLite one by one: every B-tree update
// there costs far more than the fsync. They go to a journal instead, an
// append-only sequence of segment files (journal.go). A writer encodes its
// record on its own goroutine; one goroutine appends whatever has queued up
// with one write and one fdatasync (group commit) and hands the group to a
// second, which applies each record to memory and only then answers, in
// order, while the first writes the next group: when Commit or Inbox.Put
// returns, the change is on stable storage. The one exception is the commit that only
// records that an outbox went out (runtime.Commit.SentOnly): it is applied
// at once and written behind, never after a later commit of its thread.
//
// Memory is the authority for the threads it holds: a commit is checked
// against the thread in memory (read from the database first if need be),
// and a thread leaves memory only once a checkpoint has copied it into the
// database. A checkpoint (checkpoint.go) cuts the journal between two group
// commits, writes what memory holds beyond the database in one
// transaction, and deletes the segments it covered; it runs when the
// journal passes Options.SegmentBytes, on FreezeIdle, Backup and Close, and
// before recovery's queries. A retired segment's file is kept as the spare
// and written over as a later segment (syncing blocks already allocated is
// about twice as fast); each record's CRC includes its segment's number, so
// an earlier life's records are never taken for new ones, and a cut ends a
// segment with an end record. Open replays whatever segments are left (a
// crash), skipping records the database already has; the last segment ends
// at its first invalid record (the write the crash interrupted, never
// acknowledged, or leftovers); damage before the end of the journal is
// refused (ErrCorrupt) with the files untouched. A
// write or sync error stops the journal for good: the process must restart
// and recover from the files, since memory may be ahead of them.
//
// Timers, dedup records and checkpoints go to SQLite directly through a
// second writer goroutine that owns the write connection and also commits
// in groups (WAL, synchronous=FULL). A checkpoint's transaction is the
// exception: it commits alone and without an fsync (synchronous=NORMAL,
// writer.go), since the journal segments it copied are deleted only after
// the WAL has been synced (History.retire, on the goroutine that then copies
// the WAL into the database file; at once on Close and Checkpoint). Until
// then a power failure can roll the transaction back and a restart replays
// the segments. SQLite's own WAL copy is off the commit path as well
// (wal_autocheckpoint=0, DB.copyWAL). Options.NoSync turns every fsync off.
//
// # Tiers
//
// A thread that committed recently is hot: its decoded state and items are
// in memory and a load copies them from there. FreezeIdle checkpoints and
// drops threads idle for a while from memory entirely, and writes each one's
// history as one zstd frame (a thread's history compresses far better whole
// than per commit); a thread checkpointed while still hot gets a row of
// items per checkpoint instead, merged into its frame when it goes idle.
// The next load of a dropped thread reads it back from the database.
//
// # Schema (versioned by PRAGMA user_version; see migrations)
//
//	threads (id PK (v4: seq PK, id UNIQUE), parent, spawn_at, version, length, state JSON,
//	         frozen (zstd frame of own items [0, frozen_len)), frozen_len,
//	         attention (v2: 1 when the state holds an unsent outbox or an
//	         undispatched call))
//	items   (seq, thread, pos, data)  one row per checkpoint of a hot
//	        thread: own items from pos on; v3: rowid order is insertion order (a group's rows share
//	        pages) with a unique index on (thread, pos)
//	dedup   (thread, id, expires)
//	inbox   (seq, thread, id, body JSON)   accepted, not yet consumed
//	timers  (thread, call, at, body JSON)  armed timers, by timer key (call:
//	        a sleep's call ID, chkN~call for a liveness check, mwaitN for a
//	        provider wait); a fired timer's row is deleted by that key
//	v4: the journal exists (an older build must refuse a directory whose
//	    journal it would ignore); threads becomes a rowid table (seq PK,
//	    id UNIQUE), so that small rows share leaf pages
//	v5: dead_letters (seq, thread, id, body JSON, reason, at, status): the
//	    local.DeadLetterStore (open, redriven, resolved), written through
//	    the writer, not the journal
//	v6: ledger (tree, data); v7: agent_versions (name, hash, definition, stored)
//	v8: roots (id PK, activity: the latest item time of its tree) with an
//	    index newest first, and an index of threads by parent: the tree
//	    index GET /threads pages through (History.Roots, Descendants);
//	    checkpoints and replay keep it
//	v9: digests (id PK, parent, agent, hash, pinned, versioned, data: each
//	    thread's runtime.Digest, what a GET /threads row shows), indexed by
//	    parent and by agent version; roots gains the root's status, agent
//	    and title, indexed by status and by agent, newest first: listings,
//	    filters and version counts read these, not thread states
//	    (listing.go); checkpoints write digests, replay advances them,
//	    the migration makes them in Go (fillDigests)
//	v10: timers by due time: Timers with a Horizon arm only what is due
//	    soon and read the rest as it comes due
//	v11: root_titles (FTS5, trigram, contentless but for the root's id):
//	    each root's title lower-cased, and roots.title_row its entry's
//	    rowid; a listing by title piece searches it (titles.go); written
//	    with each roots title (putDigest), the migration fills it in Go
//	    (fillTitles)
//
// The data directory holds agentslice.db (plus its -wal and -shm files),
// the journal's segments (journal-NNNNNNNN.log, and journal-spare.log) and
// a LOCK file: a second process opening the same directory is refused.
//
// # Errors
//
// Open returns ErrLocked, ErrNewerVersion, ErrNotOurs or ErrCorrupt (each
// leaving the files as they were) or an error naming the file and the
// operation. Commit returns runtime.ErrConflict for a version mismatch or a
// commit of the same thread already in flight.
package disk
