package tui

import (
	"io"
	"os"
	"syscall"
)

// CaptureStderr points file descriptor 2 at path while the screen is up.
// Whatever writes there meanwhile (a library's warning, the trace of a
// panic that bubbletea caught) would otherwise land on the alternate
// screen: it breaks the frame, and vanishes when the screen is left. The
// returned func puts the terminal back on fd 2 and returns what was
// written, to be shown once the screen is gone; the file keeps it too, and
// is removed when nothing was written.
func CaptureStderr(path string) (restore func() string, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := syscall.Dup3(int(f.Fd()), 2, 0); err != nil {
		syscall.Close(saved)
		f.Close()
		return nil, err
	}
	return func() string {
		syscall.Dup3(saved, 2, 0)
		syscall.Close(saved)
		f.Close()
		g, err := os.Open(path)
		if err != nil {
			return ""
		}
		defer g.Close()
		b, _ := io.ReadAll(io.LimitReader(g, 64<<10))
		if len(b) == 0 {
			os.Remove(path) // nothing said: no file to wonder about
		}
		return string(b)
	}, nil
}
