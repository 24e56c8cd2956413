package disk

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The listing's reads of the digests (digests.go): a tree's rows, roots
// by filter, a few roots by ID, and the count of threads per agent
// version. None reads the threads table (TestListingReadsNoThreadState).
const (
	// The parent index is partial (parent != ''): both steps say so.
	sqlTreeDigests = `WITH RECURSIVE below(id, data) AS (
			SELECT id, data FROM digests WHERE id = ?
			UNION ALL SELECT d.id, d.data FROM digests d JOIN below b ON d.parent = b.id AND d.parent != '')
		SELECT id, data FROM below`
	sqlRootsWhere = `SELECT id, activity, title FROM roots WHERE %s ORDER BY activity DESC, id`
	sqlVersions   = `SELECT hash, pinned, count(*) FROM digests WHERE %s GROUP BY hash, pinned`
)

// Node is one thread of a tree and its digest.
type Node struct {
	ID     string
	Digest runtime.Digest
}

// RootFilter selects root threads by what their roots row holds: their
// status as stored (runtime.Digest.DurableStatus), their agent, a piece
// of their title.
type RootFilter struct {
	Status string // "" for any
	Agent  string // "" for any
	// AgentIsDefault says Agent is the default agent, which a thread
	// without an agent of its own runs as once it has committed.
	AgentIsDefault bool
	// Title, when set, is a lower-case piece of the title (strings.ToLower):
	// it is looked for in every root the other conditions select.
	Title string
}

func (f *RootFilter) where() (string, []any) {
	var alt string
	w, args := f.whereOne(false)
	if f.Agent != "" && f.AgentIsDefault {
		alt, _ = f.whereOne(true)
		w = "((" + w + ") OR (" + alt + "))"
		args = append(args, args[:len(args)-1]...)
	}
	return w, args
}

// whereOne is the condition of f's roots with an agent of their own
// (or, unbound, those that run as the default agent).
func (f *RootFilter) whereOne(unbound bool) (string, []any) {
	conds, args := []string{"1"}, []any{}
	if f.Status != "" {
		conds, args = append(conds, "status = ?"), append(args, f.Status)
	}
	switch {
	case f.Agent != "" && unbound:
		conds = append(conds, "agent = '' AND versioned = 1")
	case f.Agent != "":
		conds, args = append(conds, "agent = ?"), append(args, f.Agent)
	}
	return strings.Join(conds, " AND "), args
}

// Match reports whether a root of digest d with roots row title is one f
// selects (what RootsWhere's query asks of its row).
func (f *RootFilter) Match(d *runtime.Digest) bool {
	switch {
	case f.Status != "" && d.DurableStatus() != f.Status:
		return false
	case f.Agent != "" && d.Agent != f.Agent && !(f.AgentIsDefault && d.Agent == "" && d.Versioned):
		return false
	case f.Title != "" && !strings.Contains(strings.ToLower(d.Title), f.Title):
		return false
	}
	return true
}

// RootsWhere is Roots of the roots f selects: up to limit after (afterAt,
// afterID) when afterID is set, newest first, and how many f selects in
// all. A filter by status or agent walks its index; one by title looks
// its trigrams up in the title index (titles.go) and checks the roots it
// finds, or, for a piece under three characters or one in thousands of
// titles, reads every root the others select (the roots rows only).
func (h *History) RootsWhere(ctx context.Context, f RootFilter, afterAt runtime.Stamp, afterID string, limit int) ([]Root, int, error) {
	if err := h.current(ctx); err != nil {
		return nil, 0, err
	}
	if f.Title == "" {
		page, total, err := h.rootsPage(ctx, f, false, afterAt, afterID, limit)
		if err != nil || f.Agent == "" || !f.AgentIsDefault {
			return page, total, err
		}
		// The default agent's roots are those bound to it and those bound
		// to none: two index walks, merged.
		more, n, err := h.rootsPage(ctx, f, true, afterAt, afterID, limit)
		page = append(page, more...)
		slices.SortFunc(page, func(a, b Root) int {
			if a.Activity != b.Activity {
				return cmp.Compare(b.Activity, a.Activity)
			}
			return strings.Compare(a.ID, b.ID)
		})
		return page[:min(len(page), limit)], total + n, err
	}
	keep := func(r *Root, title string) (bool, bool) {
		if !strings.Contains(strings.ToLower(title), f.Title) {
			return false, false
		}
		return true, afterID == "" || r.Activity < afterAt || (r.Activity == afterAt && r.ID > afterID)
	}
	if terms := titleTrigrams(f.Title); len(terms) > 0 {
		ids, broad, err := h.titleCandidates(ctx, terms)
		if err != nil {
			return nil, 0, err
		}
		if !broad {
			return h.rootsByTitle(ctx, f, ids, keep, limit)
		}
	}
	where, args := f.where()
	return h.scanRoots(ctx, fmt.Sprintf(sqlRootsWhere, where), args, keep, limit)
}

// rootsPage is one index walk of RootsWhere: the roots f selects, bound
// to its agent or (unbound) to none.
func (h *History) rootsPage(ctx context.Context, f RootFilter, unbound bool, afterAt runtime.Stamp, afterID string, limit int) ([]Root, int, error) {
	where, args := f.whereOne(unbound)
	var total int
	if err := h.d.rdb.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM root_counts WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("disk: counting root threads: %w", err)
	}
	if afterID != "" {
		where += " AND activity <= ? AND NOT (activity = ? AND id <= ?)"
		args = append(args, int64(afterAt), int64(afterAt), afterID)
	}
	page, _, err := h.scanRoots(ctx, fmt.Sprintf(sqlRootsWhere, where)+" LIMIT ?", append(args, limit), nil, limit)
	return page, total, err
}

// scanRoots runs a roots query. With keep, it counts the rows keep
// matches and returns up to limit of those it places on the page (after
// the cursor); without, it returns every row.
func (h *History) scanRoots(ctx context.Context, q string, args []any, keep func(*Root, string) (match, page bool), limit int) ([]Root, int, error) {
	rows, err := h.d.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("disk: listing root threads: %w", err)
	}
	defer rows.Close()
	var out []Root
	n := 0
	for rows.Next() {
		var r Root
		var at int64
		var title string
		if err := rows.Scan(&r.ID, &at, &title); err != nil {
			return nil, 0, fmt.Errorf("disk: listing root threads: %w", err)
		}
		r.Activity = runtime.Stamp(at)
		if keep == nil {
			out = append(out, r)
			continue
		}
		match, page := keep(&r, title)
		if !match {
			continue
		}
		n++
		if page && len(out) < limit {
			out = append(out, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("disk: listing root threads: %w", err)
	}
	return out, n, nil
}

// Tree returns the digests of root and of every thread below it (root
// first, the others sorted by ID), as the database holds them.
func (h *History) Tree(ctx context.Context, root string) ([]Node, error) {
	rows, err := h.d.rdb.QueryContext(ctx, sqlTreeDigests, root)
	if err != nil {
		return nil, fmt.Errorf("disk: reading the tree of %s: %w", root, err)
	}
	defer rows.Close()
	var out []Node
	for rows.Next() {
		var n Node
		var data []byte
		if err := rows.Scan(&n.ID, &data); err != nil {
			return nil, fmt.Errorf("disk: reading the tree of %s: %w", root, err)
		}
		if err := json.Unmarshal(data, &n.Digest); err != nil {
			return nil, fmt.Errorf("disk: thread %s: corrupt digest: %w", n.ID, err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("disk: reading the tree of %s: %w", root, err)
	}
	slices.SortFunc(out, func(a, b Node) int {
		switch {
		case a.ID == root:
			return -1
		case b.ID == root:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RootsByID returns the roots rows among ids (the others are not roots,
// or not stored), each with its digest, in the order of ids.
func (h *History) RootsByID(ctx context.Context, ids []string) ([]Root, []runtime.Digest, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	if err := h.current(ctx); err != nil {
		return nil, nil, err
	}
	var roots []Root
	var digests []runtime.Digest
	for _, id := range ids {
		var at int64
		var data []byte
		err := h.d.rdb.QueryRowContext(ctx, `SELECT r.activity, d.data FROM roots r JOIN digests d ON d.id = r.id WHERE r.id = ?`, id).Scan(&at, &data)
		if err != nil {
			continue // not a root (or not stored): nothing to list
		}
		var d runtime.Digest
		if err := json.Unmarshal(data, &d); err != nil {
			return nil, nil, fmt.Errorf("disk: thread %s: corrupt digest: %w", id, err)
		}
		roots, digests = append(roots, Root{ID: id, Activity: runtime.Stamp(at)}), append(digests, d)
	}
	return roots, digests, nil
}

// VersionCount is how many threads run one version of an agent, and how
// many of them are pinned to it.
type VersionCount struct {
	Hash            string
	Threads, Pinned int
}

// VersionCounts counts the threads of agent by agent version (when
// agentIsDefault, with the committed threads without an agent of their
// own), from the digests' index.
func (h *History) VersionCounts(ctx context.Context, agent string, agentIsDefault bool) ([]VersionCount, error) {
	if err := h.current(ctx); err != nil {
		return nil, err
	}
	where := "agent = ?"
	if agentIsDefault {
		where = "(agent = ? OR (agent = '' AND versioned = 1))"
	}
	rows, err := h.d.rdb.QueryContext(ctx, fmt.Sprintf(sqlVersions, where), agent)
	if err != nil {
		return nil, fmt.Errorf("disk: counting threads by agent version: %w", err)
	}
	defer rows.Close()
	var out []VersionCount
	for rows.Next() {
		var hash string
		var pinned bool
		var n int
		if err := rows.Scan(&hash, &pinned, &n); err != nil {
			return nil, fmt.Errorf("disk: counting threads by agent version: %w", err)
		}
		i := slices.IndexFunc(out, func(v VersionCount) bool { return v.Hash == hash })
		if i < 0 {
			out, i = append(out, VersionCount{Hash: hash}), len(out)
		}
		out[i].Threads += n
		if pinned {
			out[i].Pinned += n
		}
	}
	return out, rows.Err()
}

// current checkpoints when memory holds commits the database lacks, so
// that a read of the indexes answers for them too.
func (h *History) current(ctx context.Context) error {
	if h.unstored() {
		if _, err := h.checkpoint(ctx, false, 0); err != nil {
			return err
		}
	}
	return nil
}
