package examples

import (
	"os/exec"
	"testing"
)

// TestScripts runs the example scripts' own tests, which need no GPU.
func TestScripts(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-B", "-m", "unittest", "-v", "test_scripts")
	cmd.Dir = "scripts"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest test_scripts: %v\n%s", err, out)
	}
}
