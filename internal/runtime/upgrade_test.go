package runtime

import (
	"strings"
	"testing"
)

// A user message may set the upgrade policy "latest" or "pinned"; any other
// value is refused with an error naming the field.
func TestMessageUpgradePolicyIsValidated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		upgrade string
		ok      bool
	}{
		{"", true}, {UpgradeLatest, true}, {UpgradePinned, true}, {"newest", false}, {"Latest", false},
	} {
		m := Message{V: MessageVersion, ID: "m1", ThreadID: "t1", Kind: KindUser, Text: "hi", Upgrade: tc.upgrade}
		err := m.Validate()
		if tc.ok && err != nil {
			t.Errorf("upgrade %q refused: %v", tc.upgrade, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "upgrade")) {
			t.Errorf("upgrade %q: Validate = %v, want an error about the upgrade policy", tc.upgrade, err)
		}
	}
}
