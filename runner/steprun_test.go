package runner

import "testing"

// TestStepRunOf reads back the names newStepDir gives, and no other.
func TestStepRunOf(t *testing.T) {
	for name, want := range map[string][3]int{
		"a1-s1-t1":     {1, 1, 1},
		"a2-s13-t4":    {2, 13, 4},
		"a3-s2-t1-2":   {3, 2, 1},
		"a1-s1-t1-":    {},
		"a0-s1-t1":     {},
		"a1-s01-t1":    {},
		"a1-s1-t1-1":   {},
		"xa1-s1-t1":    {},
		"a1-s1-t1.log": {},
		"":             {},
	} {
		a, s, tr, ok := StepRunOf(name)
		if ok != (want != [3]int{}) || [3]int{a, s, tr} != want {
			t.Errorf("StepRunOf(%q) = %d, %d, %d, %v; want %v", name, a, s, tr, ok, want)
		}
	}
}
