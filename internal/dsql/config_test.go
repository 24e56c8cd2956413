package dsql

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5/pgxpool"
)

// staticCreds are fake credentials: signing a token is a local computation,
// so no AWS endpoint is reached.
var staticCreds = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", Source: "test"}, nil
})

const endpoint = "abcdefghijklmnopqrstuvwxyz.dsql.us-east-1.on.aws"

func dsqlConfig() Config {
	return Config{Dialect: DSQL, Endpoint: endpoint, Region: "us-east-1", User: "admin", Credentials: staticCreds}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	mod := func(f func(*Config)) Config {
		c := dsqlConfig()
		f(&c)
		return c
	}
	tests := []struct {
		name  string
		c     Config
		field string
	}{
		{"dsql ok", dsqlConfig(), ""},
		{"postgres ok", Config{Dialect: Postgres, DSN: "postgres://u@127.0.0.1:54329/db?sslmode=disable"}, ""},
		{"no dialect", Config{DSN: "postgres://x"}, "Dialect"},
		{"unknown dialect", Config{Dialect: "mysql"}, "Dialect"},
		{"no endpoint", mod(func(c *Config) { c.Endpoint = "" }), "Endpoint"},
		{"endpoint with scheme", mod(func(c *Config) { c.Endpoint = "https://" + endpoint }), "Endpoint"},
		{"endpoint with port", mod(func(c *Config) { c.Endpoint = endpoint + ":5432" }), "Endpoint"},
		{"no region", mod(func(c *Config) { c.Region = "" }), "Region"},
		{"no user", mod(func(c *Config) { c.User = "" }), "User"},
		{"bad user", mod(func(c *Config) { c.User = "a b" }), "User"},
		{"no credentials", mod(func(c *Config) { c.Credentials = nil }), "Credentials"},
		{"dsn with dsql", mod(func(c *Config) { c.DSN = "postgres://x" }), "DSN"},
		{"lifetime too long", mod(func(c *Config) { c.MaxConnLifetime = 58 * time.Minute }), "MaxConnLifetime"},
		{"negative conns", mod(func(c *Config) { c.MaxConns = -1 }), "MaxConns"},
		{"no dsn", Config{Dialect: Postgres}, "DSN"},
		{"bad dsn", Config{Dialect: Postgres, DSN: "postgres://u@host:notaport/db"}, "DSN"},
		{"endpoint with postgres", Config{Dialect: Postgres, DSN: "postgres://x", Endpoint: endpoint}, "Endpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("got %v, want a ConfigError naming %s", err, tc.field)
			}
		})
	}
}

func TestDSQLPoolConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ user, action string }{{"admin", "DbConnectAdmin"}, {"agent", "DbConnect"}} {
		t.Run(tc.user, func(t *testing.T) {
			c := dsqlConfig()
			c.User = tc.user
			pc, err := c.PoolConfig()
			if err != nil {
				t.Fatal(err)
			}
			cc := pc.ConnConfig
			if cc.Host != endpoint || cc.Port != 5432 || cc.Database != "postgres" || cc.User != tc.user {
				t.Fatalf("connects to %s:%d/%s as %s", cc.Host, cc.Port, cc.Database, cc.User)
			}
			if cc.TLSConfig == nil || cc.TLSConfig.ServerName != endpoint || cc.TLSConfig.InsecureSkipVerify || len(cc.Fallbacks) != 0 {
				t.Fatalf("TLS not required and verified: %+v, %d fallbacks", cc.TLSConfig, len(cc.Fallbacks))
			}
			if life := pc.MaxConnLifetime + pc.MaxConnLifetimeJitter; life > MaxDSQLConnAge || pc.MaxConnLifetime <= 0 {
				t.Fatalf("connections live up to %v, want at most %v", life, MaxDSQLConnAge)
			}
			if pc.BeforeConnect == nil {
				t.Fatal("no BeforeConnect: the IAM token would never be set")
			}
			// Each new connection gets a freshly signed token as its password.
			var tokens []string
			for range 2 {
				conn := cc.Copy()
				if err := pc.BeforeConnect(context.Background(), conn); err != nil {
					t.Fatal(err)
				}
				tokens = append(tokens, conn.Password)
			}
			if cc.Password != "" {
				t.Fatal("BeforeConnect changed the shared config instead of the connection's copy")
			}
			for _, tok := range tokens {
				u, err := url.Parse("https://" + tok)
				if err != nil {
					t.Fatalf("token %q: %v", tok, err)
				}
				q := u.Query()
				if u.Host != endpoint || q.Get("Action") != tc.action || q.Get("X-Amz-Signature") == "" ||
					!strings.Contains(q.Get("X-Amz-Credential"), "/us-east-1/dsql/aws4_request") {
					t.Fatalf("token %q is not a %s token for %s", tok, tc.action, endpoint)
				}
			}
		})
	}
}

func TestTokenErrorsAreClear(t *testing.T) {
	t.Parallel()
	c := dsqlConfig()
	c.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no credentials in this environment")
	})
	pc, err := c.PoolConfig()
	if err != nil {
		t.Fatal(err)
	}
	err = pc.BeforeConnect(context.Background(), pc.ConnConfig.Copy())
	if err == nil || !strings.Contains(err.Error(), "IAM auth token") || !strings.Contains(err.Error(), "no credentials in this environment") {
		t.Fatalf("got %v", err)
	}
}

func TestPostgresPoolConfig(t *testing.T) {
	t.Parallel()
	c := Config{Dialect: Postgres, DSN: "postgres://agentslice:pw@127.0.0.1:54329/agentslice?sslmode=disable", MaxConns: 2, PingAfterIdle: time.Minute}
	pc, err := c.PoolConfig()
	if err != nil {
		t.Fatal(err)
	}
	if pc.BeforeConnect != nil || pc.ConnConfig.Password != "pw" || pc.MaxConns != 2 {
		t.Fatalf("postgres pool: BeforeConnect set %v, password %q, MaxConns %d", pc.BeforeConnect != nil, pc.ConnConfig.Password, pc.MaxConns)
	}
	for _, tc := range []struct {
		idle time.Duration
		ping bool
	}{{30 * time.Second, false}, {2 * time.Minute, true}} {
		if got := pc.ShouldPing(context.Background(), pgxpool.ShouldPingParams{IdleDuration: tc.idle}); got != tc.ping {
			t.Errorf("idle %v: ping %v, want %v", tc.idle, got, tc.ping)
		}
	}
}

// TestNewPoolIsLazy: building the pool reaches no server (a Lambda builds it
// before lambda.Start; the first query connects).
func TestNewPoolIsLazy(t *testing.T) {
	t.Parallel()
	pool, err := NewPool(context.Background(), dsqlConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if st := pool.Stat(); st.TotalConns() != 0 {
		t.Fatalf("%d connections opened at construction", st.TotalConns())
	}
	if _, err := NewPool(context.Background(), Config{Dialect: DSQL}); err == nil {
		t.Fatal("NewPool accepted an invalid config")
	}
}
