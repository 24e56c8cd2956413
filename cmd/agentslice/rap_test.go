package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/rap/tools"
	"github.com/agentslice/agentslice/rapkit"
)

// TestRapCheck: `agentslice rap check` prints the table and exits 0 for a
// kit server, 1 with the failing row for a server whose toolset is
// invalid, and 1 with a usage error for a bad -probe.
func TestRapCheck(t *testing.T) {
	srv, err := rapkit.NewServer(rapkit.ServerConfig{Name: "kit", Tools: []rapkit.Tool{tools.GetTime(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	good := httptest.NewServer(srv)
	defer good.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"name":"bad","endpoint":"/invoke","tools":[]}`)
	}))
	defer bad.Close()

	for _, tc := range []struct {
		args    []string
		code    int
		out, er string
	}{
		{[]string{"rap", "check", "-probe", `get_time={"timezone":"Europe/Paris"}`, good.URL}, 0, "PASS  probe get_time", ""},
		{[]string{"rap", "check", bad.URL}, 1, `FAIL  discovery   the toolset is invalid (a runtime rejects all of it): field "tools"`, "the server failed at least one check"},
		{[]string{"rap", "check", "-probe", "get_time", good.URL}, 1, "", "-probe \"get_time\": want TOOL=JSON"},
		{[]string{"rap", "check"}, 1, "", "want one URL, got 0 arguments"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errb.String(), tc.er) {
			t.Errorf("%v: exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, out.String(), errb.String())
		}
	}
}
