package rapkittest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// recorder is a T that keeps what Check reports.
type recorder struct{ errs, logs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// TestCheckReportsEachFailedRequirement: a server that acknowledges every
// invocation but never calls back fails Check with one error per failed
// requirement, each naming it, and the table is logged.
func TestCheckReportsEachFailedRequirement(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"name":"mute","endpoint":"/invoke","tools":[{"name":"t","description":"d",
				"inputSchema":{"type":"object","required":["x"]},"annotations":{"readOnly":true}}]}`)
			return
		}
		io.WriteString(w, `{"alive": false}`)
	}))
	defer hs.Close()
	var rec recorder
	if Check(&rec, hs.URL, Timeout(200*time.Millisecond)) {
		t.Fatal("Check passed a server that never calls back")
	}
	got := strings.Join(rec.errs, "\n")
	for _, want := range []string{
		"rap check unknown_operation: answered 200 but: no tool_result: no callback within 200ms",
		"rap check invalid_arguments: t {}: answered 200 but no tool_result",
		"rap check callback_signature: no callback arrived at all",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	if len(rec.logs) == 0 || !strings.Contains(rec.logs[len(rec.logs)-1], "RAP conformance of "+hs.URL) {
		t.Errorf("the table was not logged: %q", rec.logs)
	}
}
