package testenv

import "testing"

func TestNeed(t *testing.T) {
	t.Setenv(RequireVar, "")
	t.Setenv("AGENTSLICE_TESTENV_SET", "value")
	t.Setenv("AGENTSLICE_TESTENV_UNSET", "")
	if got := Need(t, "AGENTSLICE_TESTENV_SET"); got != "value" {
		t.Fatalf("Need = %q", got)
	}
	var after bool
	t.Run("unset skips", func(t *testing.T) {
		Need(t, "AGENTSLICE_TESTENV_UNSET")
		after = true
	})
	if after {
		t.Fatal("Need returned for an unset variable instead of skipping")
	}
}
