package runtime

import "testing"

// stamp keeps a class the sender set, and gives an unclassed message the
// class of the thread it is for: this thread's, its parent's, a child's.
func TestStampKeepsASetClassAndFillsAnEmptyOne(t *testing.T) {
	t.Parallel()
	s := &slice{threadID: "t1"}
	s.st.Class, s.st.Parent, s.st.ParentClass, s.st.Children = ClassBackground, "p", ClassInteractive, []string{"c1"}
	for _, tc := range []struct {
		to    string
		class Class
		want  Class
	}{
		{"t1", "", ClassBackground},
		{"p", "", ClassInteractive},
		{"c1", "", ClassBackground},
		{"other", "", ""},
		{"t1", ClassInteractive, ClassInteractive},
		{"p", ClassBackground, ClassBackground},
	} {
		got := s.stamp(Message{ID: "m", ThreadID: tc.to, Class: tc.class})
		if got.Class != tc.want {
			t.Errorf("stamp(to %s, class %q) = %q, want %q", tc.to, tc.class, got.Class, tc.want)
		}
	}
}
