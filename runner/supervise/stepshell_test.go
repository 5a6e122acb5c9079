package supervise

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStepShellIsShC: a command run through StepShell exits, prints and
// sees its arguments as `sh -c` gives them, and its exit status lands in
// $GREENLIGHT_EXIT, except where it execs another program, is killed by
// a signal, or sets its own EXIT trap (its supervisor's word then stands
// alone).
func TestStepShellIsShC(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cmd, out string
		code     int
		file     string // "" none
	}{
		{"echo hi; exit 3", "hi\n", 3, "3\n"},
		{"false", "", 1, "1\n"},
		{"set -e; false; echo no", "", 1, "1\n"},
		{`echo "$0 [$#]"`, "sh [0]\n", 0, "0\n"},
		{"printf 'a b\\n'\necho two", "a b\ntwo\n", 0, "0\n"},
		{"if then", "", 2, "2\n"},
		{"kill -KILL $$", "", -1, ""},
		{"exec true", "", 0, ""},
		{`trap "echo mine" EXIT; exit 4`, "mine\n", 4, ""},
	} {
		exit := filepath.Join(dir, "exit")
		os.Remove(exit)
		cmd := exec.Command("sh", "-c", StepShell, "sh", c.cmd)
		cmd.Env = append(os.Environ(), "GREENLIGHT_EXIT="+exit)
		out, _ := cmd.Output()
		code := cmd.ProcessState.ExitCode()
		b, _ := os.ReadFile(exit)
		if string(out) != c.out || code != c.code || string(b) != c.file {
			t.Errorf("%q: out %q exit %d file %q; want %q, %d, %q", c.cmd, out, code, b, c.out, c.code, c.file)
		}
	}
	// Without $GREENLIGHT_EXIT it runs all the same, and says nothing of it.
	cmd := exec.Command("sh", "-c", StepShell, "sh", "echo plain; exit 5")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, _ := cmd.CombinedOutput()
	if string(out) != "plain\n" || cmd.ProcessState.ExitCode() != 5 {
		t.Errorf("no GREENLIGHT_EXIT: %q exit %d", out, cmd.ProcessState.ExitCode())
	}
}

// TestExitOnDiskIsAnEnd: a status its supervisor left "running" (killed
// before it could write the end) beside the exit status the step's own
// shell wrote reads as ended with that code; a half-written exit file
// does not.
func TestExitOnDiskIsAnEnd(t *testing.T) {
	dir := t.TempDir()
	status := filepath.Join(dir, "status.json")
	os.WriteFile(status, []byte(`{"state":"running","supervisor_pid":1,"pid":2,"exit_code":0}`), 0o644)
	if st, _ := ReadStatus(status); st.CommandEnded() {
		t.Fatalf("running with no exit on disk: %+v", st)
	}
	os.WriteFile(ExitFile(status), []byte("7"), 0o644)
	if st, _ := ReadStatus(status); st.CommandEnded() {
		t.Errorf("a half-written exit file read as an end: %+v", st)
	}
	os.WriteFile(ExitFile(status), []byte("137\n"), 0o644)
	st, _ := ReadStatus(status)
	if !st.CommandEnded() || st.ExitCode != 137 || !st.EndFromShell || !strings.Contains(st.Signal, "killed") || st.Ended.IsZero() {
		t.Errorf("exit 137 on disk: %+v; want ended, killed", st)
	}
	// The supervisor's own end wins over the shell's.
	os.WriteFile(status, []byte(`{"state":"ended","exit_code":0}`), 0o644)
	if st, _ := ReadStatus(status); st.ExitCode != 0 || st.EndFromShell {
		t.Errorf("the supervisor's end: %+v", st)
	}
}
