package sandbox

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestTriedIsNamed: a jailed command that just tries the network (a real
// listener on the host's loopback, which the jail's network namespace
// does not reach) or a write outside its sandbox fails, and its final
// event names the refusal and the way to ask for it; the user's working
// copy (its git directory) is named as never writable; a command that fails otherwise gets no
// note; under network: allow the note says no question comes, and asked
// for, the network reaches the listener.
func TestTriedIsNamed(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not on PATH")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			c.Close()
		}
	}()
	access := map[string]Access{"thr_allowed": AccessAllow}
	r := jailedRig(t, Config{NetworkFor: func(_ context.Context, thread string) (Access, error) { return access[thread], nil }})
	get := curl + " -sS --max-time 5 http://" + ln.Addr().String() + "/"

	_, final := r.run(t, "thr_tries", map[string]any{"command": get})
	mustContain(t, "the network tried", final.Text, "exit code 7", "note: the output looks like the command tried the network",
		`run it again with "network": true, which asks the person first`, "it is a guess")
	if accepted.Load() != 0 {
		t.Fatal("the jailed command reached the host's listener")
	}

	outside, err := os.MkdirTemp(".", "tried-outside-")
	if err != nil {
		t.Fatal(err)
	}
	outside, _ = filepath.Abs(outside)
	t.Cleanup(func() { os.RemoveAll(outside) })
	_, final = r.run(t, "thr_tries", map[string]any{"command": "echo x > " + filepath.Join(outside, "out.txt")})
	mustContain(t, "a write outside", final.Text, "Read-only file system", "note: the output looks like the jail refused a write outside your sandbox",
		`"write_outside": ["`+outside+`"], which asks the person first`)
	// (The git directory: a repository under /tmp has only it bound in the
	// jail's private /tmp.)
	_, final = r.run(t, "thr_tries", map[string]any{"command": "echo x > " + filepath.Join(r.m.Repo(), ".git", "description")})
	mustContain(t, "a write to the working copy", final.Text, "cannot be asked for", "holds the user's working copy")
	if strings.Contains(final.Text, "write_outside\": [") {
		t.Fatalf("the note offers to ask for the user's working copy: %s", final.Text)
	}

	_, final = r.run(t, "thr_tries", map[string]any{"command": "echo failing on its own; exit 3"})
	if strings.Contains(final.Text, "note:") {
		t.Fatalf("a command that tried nothing got a note: %s", final.Text)
	}

	_, final = r.run(t, "thr_allowed", map[string]any{"command": get})
	mustContain(t, "allowed, not asked for", final.Text, "your agent is allowed the network: no question")
	_, final = r.run(t, "thr_allowed", map[string]any{"command": get, "network": true})
	mustContain(t, "allowed and asked for", final.Text, "exit code 0", "ok")
	if accepted.Load() != 1 || strings.Contains(final.Text, "note:") {
		t.Fatalf("with the network the listener was reached %d times (want 1); result %s", accepted.Load(), final.Text)
	}
}
