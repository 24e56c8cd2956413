package dsql

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dsql/auth"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Dialect says which server the store talks to. The SQL of the store is the
// same for both; only DDL (CREATE INDEX ASYNC) and connecting differ.
type Dialect string

// The dialects.
const (
	// DSQL is Amazon Aurora DSQL: IAM token auth, TLS, async indexes.
	DSQL Dialect = "dsql"
	// Postgres is plain PostgreSQL (local tests, development).
	Postgres Dialect = "postgres"
)

// Valid reports whether d is a known dialect.
func (d Dialect) Valid() bool { return d == DSQL || d == Postgres }

// Defaults of Config.
const (
	DefaultMaxConns        = 4
	DefaultMaxConnLifetime = 50 * time.Minute
	// DefaultConnLifetimeJitter spreads recycling so that all connections of
	// a process do not reconnect at once. Lifetime + jitter stays below
	// MaxDSQLConnAge.
	DefaultConnLifetimeJitter = 5 * time.Minute
	DefaultPingAfterIdle      = 30 * time.Second
	DefaultConnectTimeout     = 10 * time.Second
	// MaxDSQLConnAge is the longest a connection may be kept on DSQL: the
	// service closes connections after 60 minutes, and we leave a margin.
	MaxDSQLConnAge = 55 * time.Minute
	dsqlPort       = 5432
	dsqlDatabase   = "postgres"
)

// Config says how to reach the history database. Build it once per process
// (in main, before lambda.Start), validate it, and make one pool with
// NewPool that every warm invocation reuses.
type Config struct {
	Dialect Dialect

	// Endpoint is the DSQL cluster endpoint host name, e.g.
	// "abcdefghijklmnopqrstuvwxyz.dsql.us-east-1.on.aws" (no scheme, no port).
	// DSQL only.
	Endpoint string
	// Region is the cluster's AWS region, used to sign auth tokens. DSQL only.
	Region string
	// User is the database role. "admin" gets DbConnectAdmin tokens, any
	// other role DbConnect tokens. DSQL only.
	User string
	// Credentials sign the IAM auth tokens, one per new connection. DSQL only.
	Credentials aws.CredentialsProvider

	// DSN is a PostgreSQL connection string (URL or key=value), with a
	// password or relying on trust auth. Postgres only.
	DSN string

	// MaxConns caps the pool (default DefaultMaxConns). A Lambda runs one
	// slice at a time, so a small pool is right there.
	MaxConns int32
	// MaxConnLifetime recycles connections (default DefaultMaxConnLifetime,
	// plus up to DefaultConnLifetimeJitter). On DSQL lifetime plus jitter
	// must stay within MaxDSQLConnAge.
	MaxConnLifetime time.Duration
	// PingAfterIdle: a connection idle longer than this is pinged (one round
	// trip) before use, to catch sockets that died while a Lambda was frozen.
	// Default DefaultPingAfterIdle; negative never pings.
	PingAfterIdle time.Duration
	// ConnectTimeout bounds dialing and authenticating (default
	// DefaultConnectTimeout).
	ConnectTimeout time.Duration
}

// ConfigError names a Config field that is missing or wrong.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("dsql: config: %s: %s", e.Field, e.Reason)
}

// Validate checks c and reports the first problem as a *ConfigError.
func (c *Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch c.Dialect {
	case DSQL:
		switch {
		case c.Endpoint == "":
			return bad("Endpoint", "required for dialect %q (the cluster endpoint host name)", DSQL)
		case strings.Contains(c.Endpoint, "://") || strings.ContainsAny(c.Endpoint, ":/?@ \t"):
			return bad("Endpoint", "%q must be a bare host name, without scheme, port or path", c.Endpoint)
		case c.Region == "":
			return bad("Region", "required for dialect %q (signs the IAM auth token)", DSQL)
		case c.User == "":
			return bad("User", "required for dialect %q (\"admin\" or a custom database role)", DSQL)
		case strings.ContainsAny(c.User, " \t'\"\\"):
			return bad("User", "%q is not a valid role name", c.User)
		case c.Credentials == nil:
			return bad("Credentials", "required for dialect %q (signs the IAM auth token for each new connection)", DSQL)
		case c.DSN != "":
			return bad("DSN", "is only used with dialect %q; dialect %q connects with Endpoint and IAM tokens", Postgres, DSQL)
		}
		if life := c.lifetime() + DefaultConnLifetimeJitter; life > MaxDSQLConnAge {
			return bad("MaxConnLifetime", "%v plus %v jitter exceeds %v: DSQL closes connections after 60 minutes", c.lifetime(), DefaultConnLifetimeJitter, MaxDSQLConnAge)
		}
	case Postgres:
		switch {
		case c.DSN == "":
			return bad("DSN", "required for dialect %q", Postgres)
		case c.Endpoint != "" || c.Region != "" || c.User != "" || c.Credentials != nil:
			return bad("Endpoint", "Endpoint, Region, User and Credentials are only used with dialect %q; put everything in DSN", DSQL)
		}
		if _, err := pgxpool.ParseConfig(c.DSN); err != nil {
			// pgx's message may quote the DSN; say what failed without it.
			return bad("DSN", "does not parse as a PostgreSQL connection string")
		}
	case "":
		return bad("Dialect", "required: %q or %q", DSQL, Postgres)
	default:
		return bad("Dialect", "%q is unknown: use %q or %q", c.Dialect, DSQL, Postgres)
	}
	switch {
	case c.MaxConns < 0:
		return bad("MaxConns", "%d is negative", c.MaxConns)
	case c.MaxConnLifetime < 0:
		return bad("MaxConnLifetime", "%v is negative", c.MaxConnLifetime)
	case c.ConnectTimeout < 0:
		return bad("ConnectTimeout", "%v is negative", c.ConnectTimeout)
	}
	return nil
}

func (c *Config) lifetime() time.Duration {
	if c.MaxConnLifetime > 0 {
		return c.MaxConnLifetime
	}
	return DefaultMaxConnLifetime
}

// PoolConfig validates c and returns the pgxpool configuration NewPool
// uses, for callers that add to it (a tracer, runtime parameters).
func (c *Config) PoolConfig() (*pgxpool.Config, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var pc *pgxpool.Config
	var err error
	switch c.Dialect {
	case DSQL:
		// sslmode=verify-full: TLS is required and the certificate must
		// match the endpoint. TLSConfig is set explicitly below so that no
		// PGSSL* environment variable can weaken it.
		dsn := fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=verify-full", c.Endpoint, dsqlPort, c.User, dsqlDatabase)
		if pc, err = pgxpool.ParseConfig(dsn); err != nil {
			return nil, fmt.Errorf("dsql: building connection config for %s: %w", c.Endpoint, err)
		}
		pc.ConnConfig.Host = c.Endpoint
		pc.ConnConfig.Port = dsqlPort
		pc.ConnConfig.User = c.User
		pc.ConnConfig.Database = dsqlDatabase
		pc.ConnConfig.Password = ""
		pc.ConnConfig.TLSConfig = &tls.Config{ServerName: c.Endpoint, MinVersion: tls.VersionTLS12}
		pc.ConnConfig.Fallbacks = nil
		pc.BeforeConnect = tokenInjector(c.Endpoint, c.Region, c.User, c.Credentials)
	case Postgres:
		if pc, err = pgxpool.ParseConfig(c.DSN); err != nil {
			return nil, &ConfigError{Field: "DSN", Reason: "does not parse as a PostgreSQL connection string"}
		}
	}
	if pc.ConnConfig.RuntimeParams == nil {
		pc.ConnConfig.RuntimeParams = map[string]string{}
	}
	if pc.ConnConfig.RuntimeParams["application_name"] == "" {
		pc.ConnConfig.RuntimeParams["application_name"] = "agentslice"
	}
	pc.MaxConns = DefaultMaxConns
	if c.MaxConns > 0 {
		pc.MaxConns = c.MaxConns
	}
	pc.MinConns = 0 // connect lazily: a cold start pays for the connection only when it needs one
	pc.MaxConnLifetime = c.lifetime()
	pc.MaxConnLifetimeJitter = DefaultConnLifetimeJitter
	pc.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	if c.ConnectTimeout > 0 {
		pc.ConnConfig.ConnectTimeout = c.ConnectTimeout
	}
	idle := c.PingAfterIdle
	if idle == 0 {
		idle = DefaultPingAfterIdle
	}
	pc.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool {
		return idle > 0 && p.IdleDuration > idle
	}
	return pc, nil
}

// NewPool builds the connection pool described by c. It does not connect:
// the first query does. Build it once per process and share it.
func NewPool(ctx context.Context, c Config) (*pgxpool.Pool, error) {
	pc, err := c.PoolConfig()
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("dsql: creating pool for %s: %w", pc.ConnConfig.Host, err)
	}
	return pool, nil
}

// tokenInjector returns a BeforeConnect hook that signs a fresh IAM auth
// token for every new connection: tokens expire (15 minutes by default),
// connections outlive them, and signing is a local computation.
func tokenInjector(endpoint, region, user string, creds aws.CredentialsProvider) func(context.Context, *pgx.ConnConfig) error {
	gen := auth.GenerateDbConnectAuthToken
	if user == "admin" {
		gen = auth.GenerateDBConnectAdminAuthToken
	}
	return func(ctx context.Context, cc *pgx.ConnConfig) error {
		token, err := gen(ctx, endpoint, region, creds)
		if err != nil {
			return fmt.Errorf("dsql: generating IAM auth token for %s as %s: %w", endpoint, user, err)
		}
		cc.Password = token
		return nil
	}
}
