package procenv

import (
	"slices"
	"testing"
)

func TestBuild(t *testing.T) {
	t.Parallel()
	parent := []string{"PATH=/bin", "HOME=/home/a", "LC_ALL=C", "AWS_SECRET_ACCESS_KEY=s",
		"AGENTSLICE_CALLBACK_KEYS=k", "AGENTSLICE_TOKEN=t", "agentslice_token=lower", "GOFLAGS=-x", "noequals"}
	got := Build(parent, []string{"GO*", "AGENTSLICE_*", "AGENTSLICE_TOKEN"},
		[]string{"TOKEN=x", "HOME=/override", "AGENTSLICE_TOKEN=configured"})
	want := []string{"PATH=/bin", "HOME=/home/a", "LC_ALL=C", "GOFLAGS=-x", "TOKEN=x", "HOME=/override"}
	if !slices.Equal(got, want) {
		t.Fatalf("Build = %q\nwant    %q", got, want)
	}
	if got := Build(nil, nil, nil); got == nil {
		t.Fatal("Build of nothing is nil: exec would inherit the whole environment")
	}
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{"GOPATH": true, "AWS_*": true, "AGENTSLICE_TOKEN": false,
		"AGENTSLICE_*": false, "AGENT*": false, "*": false, "": false, "A=B": false, "agentslice_x": false} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
