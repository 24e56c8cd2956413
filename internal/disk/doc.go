// Package disk is the durable store of the embedded system (`agentslice
// serve`): threads' history and state, processed message IDs, the inbox of
// accepted messages and the armed sleeps, in one SQLite database file under a
// data directory, through modernc.org/sqlite (SQLite translated to Go: no
// cgo, so `go build` stays one command).
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
// # Durability and group commit (the fsync policy)
//
// The database runs in WAL mode with synchronous=FULL: a transaction is
// durable when COMMIT returns (the WAL is fsynced). One goroutine owns the
// write connection and commits in groups: whatever writes are waiting
// (history commits, inbox and dedup writes, timers) go into one transaction,
// so one fsync covers them all, and each caller is answered only after that
// COMMIT. A history commit runs inside its own SAVEPOINT, so one that
// conflicts is rolled back alone and the rest of the group commits.
//
// # Tiers
//
// A thread that committed recently is hot: its decoded state and items are
// cached in memory and a load copies them from there. Each commit appends one
// row of items (the compact binary form of internal/local, derivable IDs left
// out) and replaces the thread's state. FreezeIdle drops threads idle for a
// while from memory entirely and, on disk, merges their item rows into one
// zstd frame per thread (the frozen tier on disk: a thread's history
// compresses far better whole than per commit). The next load of such a
// thread reads it back from the database.
//
// # Schema (versioned by PRAGMA user_version; see migrations)
//
//	threads (id PK, parent, spawn_at, version, length, state JSON,
//	         frozen (zstd frame of own items [0, frozen_len)), frozen_len,
//	         attention (v2: 1 when the state holds an unsent outbox or an
//	         undispatched call))
//	items   (seq, thread, pos, data)  one row per commit: own items from
//	        pos on; v3: rowid order is insertion order (a group's rows share
//	        pages) with a unique index on (thread, pos)
//	dedup   (thread, id, expires)
//	inbox   (seq, thread, id, body JSON)   accepted, not yet consumed
//	timers  (thread, call, at, body JSON)  armed sleeps
//
// The data directory holds agentslice.db (plus its -wal and -shm files) and
// a LOCK file: a second process opening the same directory is refused.
package disk
