package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateCLIDoc = flag.Bool("update-cli-doc", false, "rewrite docs/cli.md from the commands' help")

// docs/cli.md is the commands' own help, so the reference cannot drift
// from the code: this test fails when they differ; regenerate it with
// go test ./cmd/agentslice -run TestCLIReference -update-cli-doc.
func TestCLIReference(t *testing.T) {
	t.Setenv("HOME", "/home/you")
	t.Setenv("XDG_DATA_HOME", "")
	for _, v := range []string{"AGENTSLICE_DATA", "AGENTSLICE_SERVER", "AGENTSLICE_TOKEN"} {
		t.Setenv(v, "")
	}
	var doc bytes.Buffer
	doc.WriteString("# Command-line reference\n\n")
	doc.WriteString("Generated from the commands' own help (`agentslice <command> -h`) by\n")
	doc.WriteString("`go test ./cmd/agentslice -run TestCLIReference -update-cli-doc`; a test fails\n")
	doc.WriteString("when this page and the binary differ. Exit status: 0 on success; otherwise a code\n")
	doc.WriteString("that follows the API's answer (2 usage, 3 not found, 4 conflict, 5 refused,\n")
	doc.WriteString("6 unreachable, 7 auth, 1 anything else; [terminal.md](terminal.md#exit-codes))\n")
	doc.WriteString("and a message naming what is wrong.\n\n")
	var top bytes.Buffer
	usage(&top)
	fmt.Fprintf(&doc, "```\n%s```\n", top.String())
	for _, c := range commands() {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{c.name, "-h"}, &out, &errOut)
		help := out.String() + errOut.String()
		if code != 0 {
			t.Errorf("agentslice %s -h: exit %d:\n%s", c.name, code, help)
		}
		if strings.TrimSpace(help) == "" {
			t.Errorf("agentslice %s -h printed nothing", c.name)
		}
		fmt.Fprintf(&doc, "\n## agentslice %s\n\n%s.\n\n```\n%s```\n", c.name, c.summary, strings.TrimRight(help, "\n")+"\n")
	}
	const path = "../../docs/cli.md"
	if *updateCLIDoc {
		if err := os.WriteFile(path, doc.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, doc.Bytes()) {
		t.Fatalf("docs/cli.md is not the commands' current help (%v): run go test ./cmd/agentslice -run TestCLIReference -update-cli-doc", err)
	}
}
