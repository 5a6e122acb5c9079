package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// What is written to stderr while the screen is up goes to a file, and
// fd 2 is the terminal again afterwards.
func TestStderrIsKeptOffTheScreen(t *testing.T) {
	var before, after syscall.Stat_t
	if err := syscall.Fstat(2, &before); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "monitor-stderr.log")
	restore, err := CaptureStderr(path)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(os.Stderr, "a library's warning")
	syscall.Write(2, []byte("Caught panic: on fd 2\n"))
	said := restore()
	if err := syscall.Fstat(2, &after); err != nil {
		t.Fatal(err)
	}
	if before.Dev != after.Dev || before.Ino != after.Ino {
		t.Error("fd 2 is not what it was before the capture")
	}
	if want := "a library's warning\nCaught panic: on fd 2\n"; said != want {
		t.Errorf("restore returned %q; want %q", said, want)
	}
	if b, _ := os.ReadFile(path); string(b) != said {
		t.Errorf("the file holds %q", b)
	}
	restore, err = CaptureStderr(path)
	if err != nil {
		t.Fatal(err)
	}
	if said := restore(); said != "" {
		t.Errorf("nothing written, restore returned %q", said)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("an empty capture left its file: %v", err)
	}
}
