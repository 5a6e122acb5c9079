package format

import "testing"

func TestGrouped(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 4210: "4,210", 1234567.6: "1,234,568", -12345: "-12,345"} {
		if got := Grouped(v); got != want {
			t.Errorf("Grouped(%v) = %q, want %q", v, got, want)
		}
	}
}
