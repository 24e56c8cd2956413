package server

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/runtime"
)

// GET /threads lists thread trees, a page at a time:
//
//	?limit=N     trees per page (default 50, at most 500)
//	?cursor=C    the next page after the one that answered next_cursor C
//	?status=S    only trees whose root has this status
//	?agent=A     only trees whose root runs as agent A
//	?q=TEXT      only trees whose root's title contains TEXT (any case)
//
// Trees are ordered by last activity, newest first: the latest item time
// anywhere in the tree (then by root ID). A thread shows its agent and
// its title, the first user message of its own history, trimmed.

// Paging limits of GET /threads.
const (
	threadsPageDefault = 50
	threadsPageMax     = 500
)

// threadStatuses are the statuses a thread can have (Server.status).
var threadStatuses = []string{"closed", "running", "sleeping", "waiting_for_choice", "waiting_for_tool", "watching", "idle"}

// treeNode is one thread of GET /threads.
type treeNode struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Title     string `json:"title,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Temporary bool   `json:"temporary,omitempty"`
	Length    int    `json:"length"`
	Tokens    int    `json:"tokens,omitempty"`
	// LastActivity is the latest item time of the thread and its
	// descendants.
	LastActivity runtime.Stamp `json:"last_activity,omitempty"`
	Children     []*treeNode   `json:"children,omitempty"`
}

type treeResponse struct {
	Threads []*treeNode `json:"threads"`
	// Count is the threads on this page, children included; Total the
	// trees that match, on every page.
	Count int `json:"count"`
	Total int `json:"total"`
	// NextCursor, when set, fetches the next page.
	NextCursor string `json:"next_cursor,omitempty"`
	// Truncated says the server considered only its first
	// limits.max_threads_listed threads.
	Truncated bool `json:"truncated,omitempty"`
}

// threadsQuery is a parsed GET /threads query.
type threadsQuery struct {
	limit            int
	status, agent, q string
	afterAt          runtime.Stamp // the cursor: the last tree of the previous page
	afterID          string
	hasCursor        bool
}

func parseThreadsQuery(r *http.Request) (threadsQuery, *apiError) {
	v := r.URL.Query()
	q := threadsQuery{limit: threadsPageDefault, status: v.Get("status"), agent: v.Get("agent"), q: strings.ToLower(v.Get("q"))}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > threadsPageMax {
			return q, &apiError{Field: "limit", Error: fmt.Sprintf("%q is not a page size from 1 to %d", s, threadsPageMax)}
		}
		q.limit = n
	}
	if q.status != "" && !slices.Contains(threadStatuses, q.status) {
		return q, &apiError{Field: "status", Error: fmt.Sprintf("unknown status %q (want one of %s)", q.status, strings.Join(threadStatuses, ", "))}
	}
	if c := v.Get("cursor"); c != "" {
		at, id, ok := decodeCursor(c)
		if !ok {
			return q, &apiError{Field: "cursor", Error: "not a cursor this server handed out (use next_cursor as it came)"}
		}
		q.afterAt, q.afterID, q.hasCursor = at, id, true
	}
	return q, nil
}

// The cursor is the sort key of the last tree of a page, opaque to clients.
func encodeCursor(at runtime.Stamp, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(int64(at), 10) + "\x00" + id))
}

func decodeCursor(c string) (runtime.Stamp, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", false
	}
	at, id, ok := strings.Cut(string(b), "\x00")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", false
	}
	return runtime.Stamp(n), id, true
}

// compareTrees orders trees newest first, then by ID.
func compareTrees(aAt runtime.Stamp, aID string, bAt runtime.Stamp, bID string) int {
	if aAt != bAt {
		return cmp.Compare(bAt, aAt)
	}
	return cmp.Compare(aID, bID)
}

// agentOf is the agent a thread runs as: its binding, else the default
// agent once it has run.
func (s *Server) agentOf(st *runtime.ThreadState) string {
	if st.Agent == "" && st.Version > 0 && s.agents != nil {
		return s.agents.Default()
	}
	return st.Agent
}

func (s *Server) listThreads(w http.ResponseWriter, r *http.Request) {
	q, bad := parseThreadsQuery(r)
	if bad != nil {
		writeJSON(w, http.StatusBadRequest, bad)
		return
	}
	if ix, ok := s.store.(digestIndex); ok {
		s.listIndexed(w, r, q, ix)
		return
	}
	ids := s.store.Threads()
	resp := treeResponse{Threads: []*treeNode{}}
	if len(ids) > s.set.maxListed {
		ids, resp.Truncated = ids[:s.set.maxListed], true
	}
	roots, err := s.trees(r.Context(), ids)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "%v", err)
		return
	}
	matching := roots[:0]
	for _, n := range roots {
		treeActivity(n)
		if (q.status == "" || n.Status == q.status) && (q.agent == "" || n.Agent == q.agent) &&
			(q.q == "" || strings.Contains(strings.ToLower(n.Title), q.q)) {
			matching = append(matching, n)
		}
	}
	slices.SortFunc(matching, func(a, b *treeNode) int { return compareTrees(a.LastActivity, a.ID, b.LastActivity, b.ID) })
	resp.Total = len(matching)
	start := 0
	if q.hasCursor { // the first tree after the cursor's
		start, _ = slices.BinarySearchFunc(matching, q, func(n *treeNode, q threadsQuery) int {
			if compareTrees(n.LastActivity, n.ID, q.afterAt, q.afterID) <= 0 {
				return -1
			}
			return 1
		})
	}
	page := matching[start:]
	if len(page) > q.limit {
		page = page[:q.limit]
		last := page[len(page)-1]
		resp.NextCursor = encodeCursor(last.LastActivity, last.ID)
	}
	resp.Threads = append(resp.Threads, page...)
	for _, n := range page {
		resp.Count += treeSize(n)
	}
	writeJSON(w, http.StatusOK, resp)
}

// trees loads the threads ids and arranges them as trees (arrange).
func (s *Server) trees(ctx context.Context, ids []string) ([]*treeNode, error) {
	nodes := make([]disk.Node, 0, len(ids))
	for _, id := range ids {
		th, err := s.store.Load(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("loading thread %s: %w", id, err)
		}
		nodes = append(nodes, disk.Node{ID: id, Digest: runtime.DigestOf(&th.State, th.Own())})
	}
	return s.arrange(nodes), nil
}

// nodeOf is the row of thread id of digest d: its status as stored, or
// running, or past a choice whose answer is on its way.
func (s *Server) nodeOf(id string, d *runtime.Digest) *treeNode {
	status := runtime.StatusClosed
	switch {
	case d.Closed:
	case s.running.running(id):
		status = "running"
	default:
		status = d.Status(sleepTools, func(call string) bool { return s.answering(id, call) })
	}
	agent := d.Agent
	if agent == "" && d.Versioned && s.agents != nil {
		agent = s.agents.Default()
	}
	return &treeNode{ID: id, Status: status, Title: d.Title, Agent: agent, Temporary: d.Temporary, Length: d.Length,
		Tokens: d.Tokens, LastActivity: d.LastActivity}
}

// arrange arranges threads as trees: children in the order their parent
// spawned them, then those it does not list (threaded events); a thread
// whose parent is not among them is a root.
func (s *Server) arrange(threads []disk.Node) []*treeNode {
	nodes := make(map[string]*treeNode, len(threads))
	parents := make(map[string]string, len(threads))
	for i := range threads {
		nodes[threads[i].ID] = s.nodeOf(threads[i].ID, &threads[i].Digest)
		parents[threads[i].ID] = threads[i].Digest.Parent
	}
	placed := map[string]bool{}
	for i := range threads { // children in the order their parent spawned them
		id := threads[i].ID
		for _, c := range threads[i].Digest.Children {
			if n := nodes[c]; n != nil && !placed[c] && parents[c] == id {
				nodes[id].Children = append(nodes[id].Children, n)
				placed[c] = true
			}
		}
	}
	var roots []*treeNode
	for i := range threads {
		id, parent := threads[i].ID, threads[i].Digest.Parent
		if placed[id] {
			continue
		}
		if p := nodes[parent]; p != nil && parent != "" {
			p.Children = append(p.Children, nodes[id]) // a child its parent does not list (a threaded event)
		} else {
			roots = append(roots, nodes[id]) // a root, or its parent was not listed
		}
	}
	return roots
}

// digestIndex is a store that pages through root threads by their tree's
// last activity, filtered by what their digests hold, and reads a tree's
// digests without loading its threads (the sqlite store's tree index and
// digests): GET /threads then reads no thread state, whatever the number
// of threads.
type digestIndex interface {
	Roots(ctx context.Context, afterAt runtime.Stamp, afterID string, limit int) ([]disk.Root, int, error)
	RootsWhere(ctx context.Context, f disk.RootFilter, afterAt runtime.Stamp, afterID string, limit int) ([]disk.Root, int, error)
	RootsByID(ctx context.Context, ids []string) ([]disk.Root, []runtime.Digest, error)
	Tree(ctx context.Context, root string) ([]disk.Node, error)
}

// listIndexed is GET /threads on a store with a digest index: a page of
// roots from the index, each tree from its digests. The index holds each
// root's status as stored; the roots whose status here differs (running,
// or with a person's answer on its way: overlaid) are left out of its
// answer and judged apart.
func (s *Server) listIndexed(w http.ResponseWriter, r *http.Request, q threadsQuery, ix digestIndex) {
	ctx := r.Context()
	afterID := ""
	if q.hasCursor {
		afterID = q.afterID
	}
	f := disk.RootFilter{Status: q.status, Agent: q.agent, Title: q.q}
	f.AgentIsDefault = q.agent != "" && s.agents != nil && q.agent == s.agents.Default()
	var page []disk.Root
	var total int
	var err error
	if f == (disk.RootFilter{}) {
		page, total, err = ix.Roots(ctx, q.afterAt, afterID, q.limit+1)
	} else {
		page, total, err = s.rootsWhere(ctx, ix, f, q, afterID)
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "%v", err)
		return
	}
	resp := treeResponse{Threads: []*treeNode{}, Total: total}
	if len(page) > q.limit {
		page = page[:q.limit]
		last := page[len(page)-1]
		resp.NextCursor = encodeCursor(last.Activity, last.ID)
	}
	for _, root := range page {
		tree, err := ix.Tree(ctx, root.ID)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "", "%v", err)
			return
		}
		for _, n := range s.arrange(tree) {
			if n.ID == root.ID {
				treeActivity(n)
				resp.Threads = append(resp.Threads, n)
				resp.Count += treeSize(n)
			}
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// rootsWhere is the index's page of the roots f selects (up to
// q.limit+1) and their number, with the overlaid roots judged by their
// status here when f asks for a status.
func (s *Server) rootsWhere(ctx context.Context, ix digestIndex, f disk.RootFilter, q threadsQuery, afterID string) ([]disk.Root, int, error) {
	var over []disk.Root
	var digests []runtime.Digest
	if f.Status != "" {
		var err error
		if over, digests, err = ix.RootsByID(ctx, s.overlaid()); err != nil {
			return nil, 0, err
		}
	}
	page, total, err := ix.RootsWhere(ctx, f, q.afterAt, afterID, q.limit+1+len(over))
	if err != nil || len(over) == 0 {
		return page, total, err
	}
	page = slices.DeleteFunc(page, func(r disk.Root) bool {
		return slices.ContainsFunc(over, func(o disk.Root) bool { return o.ID == r.ID })
	})
	others := f
	others.Status = ""
	for i, o := range over {
		if f.Match(&digests[i]) {
			total-- // counted by the index under its stored status
		}
		if !others.Match(&digests[i]) || s.nodeOf(o.ID, &digests[i]).Status != f.Status {
			continue
		}
		total++
		if !q.hasCursor || compareTrees(o.Activity, o.ID, q.afterAt, q.afterID) > 0 {
			page = append(page, o)
		}
	}
	slices.SortFunc(page, func(a, b disk.Root) int { return compareTrees(a.Activity, a.ID, b.Activity, b.ID) })
	return page[:min(len(page), q.limit+1)], total, nil
}

// overlaid are the threads whose status here is not their status as
// stored: those a slice runs on, those a person's answer is on its way to.
func (s *Server) overlaid() []string {
	ids := s.running.list()
	s.answers.Range(func(k, _ any) bool {
		id, _, _ := strings.Cut(k.(string), "\x00")
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		return true
	})
	return ids
}

// treeActivity sets n.LastActivity to the latest of its tree's and
// returns it.
func treeActivity(n *treeNode) runtime.Stamp {
	for _, c := range n.Children {
		n.LastActivity = max(n.LastActivity, treeActivity(c))
	}
	return n.LastActivity
}

func treeSize(n *treeNode) int {
	size := 1
	for _, c := range n.Children {
		size += treeSize(c)
	}
	return size
}
