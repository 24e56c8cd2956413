package rapkittest_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/agentslice/agentslice/rapkit"
	"github.com/agentslice/agentslice/rapkit/rapkittest"
)

// printT prints what Check reports; a test passes its *testing.T instead.
type printT struct{}

func (printT) Helper()                           {}
func (printT) Errorf(format string, args ...any) { fmt.Printf("error: "+format+"\n", args...) }
func (printT) Logf(format string, args ...any)   {}

// ExampleCheck checks a tool server as a test would.
func ExampleCheck() {
	srv, _ := rapkit.NewServer(rapkit.ServerConfig{Name: "adder", Tools: []rapkit.Tool{{
		Name:        "add",
		Description: "Adds two integers.",
		InputSchema: []byte(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
		Run: func(ctx context.Context, c *rapkit.Call) error {
			var x struct{ A, B int }
			if err := c.Args(&x); err != nil {
				return err
			}
			return c.Result(ctx, fmt.Sprint(x.A+x.B))
		},
	}}})
	_ = srv.Start(context.Background())
	defer srv.Stop()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	fmt.Println(rapkittest.Check(printT{}, hs.URL, rapkittest.Probe("add", `{"a": 2, "b": 3}`)))
	// Output: true
}
