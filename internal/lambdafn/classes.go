package lambdafn

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentslice/agentslice/internal/dsql"
)

// BackgroundQueueURL reads the optional FIFO input queue of background
// threads (EnvBackgroundQueueURL). Empty means one input queue for both
// classes; see sqsq.NewClassQueues.
func (r *Reader) BackgroundQueueURL() string {
	v := r.Opt(EnvBackgroundQueueURL)
	if v != "" && !strings.HasSuffix(v, ".fifo") {
		r.Fail(EnvBackgroundQueueURL, "%q is not a FIFO queue URL (the name must end in .fifo)", v)
	}
	return v
}

// ClassDB is where a sender that is not the slice function (the callback
// receiver) looks up the priority class of a thread whose message carries
// none (sqsq.Router.WithClassLookup): the history database, read as a role
// that may read the thread rows only (dsql.ReaderRole). Zero means no
// lookup: such messages go to the interactive queue.
type ClassDB struct {
	// Exactly one of DSQLEndpoint and PGDSN is set, or neither.
	DSQLEndpoint, DSQLUser, Region string
	PGDSN                          string
}

// Set reports whether a class database is configured.
func (c ClassDB) Set() bool { return c.DSQLEndpoint != "" || c.PGDSN != "" }

// DefaultReaderUser is the database role the receiver connects as.
const DefaultReaderUser = dsql.ReaderRole

// ClassDB reads the optional class database: EnvDSQLEndpoint (with
// EnvDSQLUser, default DefaultReaderUser, and EnvRegion) or, for local
// runs, EnvPGDSN. It is needed only while callback URLs minted before every
// URL carried the class are alive (their TTL, 30 days by default) and with
// a background queue: without one every message goes to the one queue.
func (r *Reader) ClassDB() ClassDB {
	c := ClassDB{DSQLEndpoint: r.Opt(EnvDSQLEndpoint), PGDSN: r.Opt(EnvPGDSN)}
	switch {
	case c.DSQLEndpoint != "" && c.PGDSN != "":
		r.Fail(EnvPGDSN, "set together with %s; set at most one of them", EnvDSQLEndpoint)
	case c.DSQLEndpoint != "":
		if c.DSQLUser = r.Opt(EnvDSQLUser); c.DSQLUser == "" {
			c.DSQLUser = DefaultReaderUser
		}
		c.Region = r.Must(EnvRegion, "the AWS region, needed to sign DSQL auth tokens")
	}
	return c
}

// NewClassLookup connects to the class database and returns the lookup
// and the function that closes its pool. The pool connects on first use,
// so a receiver whose callbacks all carry their class never opens a
// connection.
func NewClassLookup(ctx context.Context, c ClassDB, awsCfg aws.Config) (*dsql.Store, func(), error) {
	cfg := dsql.Config{Dialect: dsql.Postgres, DSN: c.PGDSN}
	if c.DSQLEndpoint != "" {
		cfg = dsql.Config{Dialect: dsql.DSQL, Endpoint: c.DSQLEndpoint, Region: c.Region, User: c.DSQLUser, Credentials: awsCfg.Credentials}
	}
	pool, err := dsql.NewPool(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("lambdafn: the class database (%s or %s): %w", EnvDSQLEndpoint, EnvPGDSN, err)
	}
	return dsql.New(pool, dsql.Options{}), pool.Close, nil
}
