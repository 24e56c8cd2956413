package cost

import "math"

// Aurora DSQL's metering, as AWS documents it ("How billing works in
// Aurora DSQL", docs.aws.amazon.com/aurora-dsql/latest/userguide/billing-metering.html,
// read 2026-12-02). A transaction's DPUs are the sum of
//
//	ComputeDPU = its compute time in seconds
//	ReadDPU    = max(bytes read, 2,048) x 0.00000183105
//	WriteDPU   = max(Σ max(row size, 128), 1,024) x 0.00004883
//
// (a read of a storage partition that returns under 128 bytes counts as
// 128; a write also reads the primary key to check uniqueness, so a write
// transaction has a ReadDPU too). Single-Region clusters only: a
// multi-Region cluster doubles the WriteDPU.
const (
	DSQLReadDPUPerByte  = 0.00000183105
	DSQLWriteDPUPerByte = 0.00004883
	DSQLMinReadBytes    = 2048 // per transaction
	DSQLMinWriteBytes   = 1024 // per transaction
	DSQLMinRowBytes     = 128  // per row written
)

// DSQLReadDPU is the ReadDPU of a transaction that read bytes.
func DSQLReadDPU(bytes float64) float64 {
	return math.Max(bytes, DSQLMinReadBytes) * DSQLReadDPUPerByte
}

// DSQLWriteDPU is the WriteDPU of a transaction that wrote rows of these
// sizes (0 for none).
func DSQLWriteDPU(rows []int) float64 {
	if len(rows) == 0 {
		return 0
	}
	billed := 0.0
	for _, r := range rows {
		billed += math.Max(float64(r), DSQLMinRowBytes)
	}
	return math.Max(billed, DSQLMinWriteBytes) * DSQLWriteDPUPerByte
}

// dsqlWriteDPUMean is DSQLWriteDPU of an average commit: rows rows of
// bytes bytes in all, each taken at the average size (the per-row minimum
// applies to the average, a close figure while rows are of similar size
// or all above 128 bytes).
func dsqlWriteDPUMean(rows, bytes float64) float64 {
	if rows <= 0 {
		return 0
	}
	return math.Max(rows*math.Max(bytes/rows, DSQLMinRowBytes), DSQLMinWriteBytes) * DSQLWriteDPUPerByte
}

// Rows and bytes the history store reads and writes (internal/dsql's
// Meter counts the same way): an item row is its body plus the thread ID
// and 14 bytes of fixed columns; the thread row its state plus IDs and
// 30 bytes.
const (
	DSQLItemRowFixed   = 14
	DSQLThreadRowFixed = 30
)

// DSQLSlice is one slice's DPUs on Aurora DSQL: its load (one read
// transaction) and its commit (one write transaction, which also reads
// the thread row and checks keys).
type DSQLSlice struct {
	ReadBytesPerLoad, RowsPerCommit, WriteBytesPerCommit float64
	LoadRead, CommitWrite, CommitRead, Compute           float64
}

// Total is the slice's DPUs.
func (d DSQLSlice) Total() float64 { return d.LoadRead + d.CommitWrite + d.CommitRead + d.Compute }

// IO is the slice's DPUs without compute (what bytes decide).
func (d DSQLSlice) IO() float64 { return d.LoadRead + d.CommitWrite + d.CommitRead }

// dsqlSlice derives a slice's reads and writes from the workload: a load
// reads the thread row and the view, taken as the whole stored history
// (history_turns turns: no summary cuts it, the most a load reads); a
// commit rewrites the thread row and appends the turn's items, spread
// over its slices. Fields the workload sets (not 0) win.
func dsqlSlice(w *Workload, slices, completions float64) DSQLSlice {
	itemsPerTurn := 1 + completions + 2*(w.ToolCallsPerTurn+w.ShortSleepsPerTurn+w.LongSleepsPerTurn)
	key := w.DSQLThreadIDBytes
	d := DSQLSlice{
		ReadBytesPerLoad:    w.DSQLReadBytesPerLoad,
		RowsPerCommit:       w.DSQLRowsPerCommit,
		WriteBytesPerCommit: w.DSQLWriteBytesPerCommit,
	}
	if d.ReadBytesPerLoad == 0 {
		d.ReadBytesPerLoad = w.DSQLThreadRowBytes + w.HistoryBytesPerTurn*w.HistoryTurns +
			itemsPerTurn*w.HistoryTurns*(key+DSQLItemRowFixed)
	}
	if d.RowsPerCommit == 0 {
		d.RowsPerCommit = 1 + itemsPerTurn/slices
	}
	if d.WriteBytesPerCommit == 0 {
		d.WriteBytesPerCommit = w.DSQLThreadRowBytes + (w.HistoryBytesPerTurn+itemsPerTurn*(key+DSQLItemRowFixed))/slices
	}
	d.LoadRead = DSQLReadDPU(d.ReadBytesPerLoad)
	d.CommitWrite = dsqlWriteDPUMean(d.RowsPerCommit, d.WriteBytesPerCommit)
	d.CommitRead = DSQLReadDPU(w.DSQLThreadRowBytes)
	d.Compute = (w.DSQLComputeMsPerLoad + w.DSQLComputeMsPerCommit) / 1000
	return d
}
