package modelload

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Residency is how much of a folder's files the page cache held.
type Residency struct {
	Files    int           `json:"files"`
	Bytes    int64         `json:"bytes"`    // the files' size
	Resident int64         `json:"resident"` // of it, in the page cache
	Took     time.Duration `json:"took_ns"`
	Cut      bool          `json:"cut,omitempty"` // the time bound ended the count: Bytes is what was counted
}

// Share is the part of the files resident, 0-1 (0 for no files).
func (r Residency) Share() float64 {
	if r.Bytes == 0 {
		return 0
	}
	return float64(r.Resident) / float64(r.Bytes)
}

// Word says the load a server starts with these files is: cold (under
// 10% resident), warm (90% or more) or partly warm.
func (r Residency) Word() string {
	switch s := r.Share(); {
	case s >= 0.9:
		return "warm"
	case s < 0.1:
		return "cold"
	default:
		return "partly warm"
	}
}

// String is the line a person reads: "cold: 3% of 1.9 TB in the page cache".
func (r Residency) String() string {
	s := fmt.Sprintf("%s: %.0f%% of %s in the page cache (%d files)", r.Word(), 100*r.Share(), Size(r.Bytes), r.Files)
	if r.Cut {
		s += ", counted in part: the count ran out of time"
	}
	return s
}

// Size says bytes in decimal units, as disks and downloads do.
func Size(b int64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%.2f TB", float64(b)/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(b)/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.0f MB", float64(b)/1e6)
	}
	return fmt.Sprintf("%d B", b)
}

// files are the regular, non-empty files under dir (links followed at the
// top only, as a model folder of the HF cache is a tree of links).
func files(dir string) ([]string, []int64, error) {
	var paths []string
	var sizes []int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := os.Stat(p) // follows a link to its blob
		if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
			return nil
		}
		paths = append(paths, p)
		sizes = append(sizes, fi.Size())
		return nil
	})
	return paths, sizes, err
}

// Measure counts, with mincore, the pages of dir's files the page cache
// holds. It reads no file's data and stops at ctx's end (Cut).
func Measure(ctx context.Context, dir string) (Residency, error) {
	start := time.Now()
	var r Residency
	paths, sizes, err := files(dir)
	if err != nil {
		return r, err
	}
	page := int64(os.Getpagesize())
	for i, p := range paths {
		if ctx.Err() != nil {
			r.Cut = true
			break
		}
		n, err := residentOf(p, sizes[i], page)
		if err != nil {
			continue // a file that cannot be mapped counts as not there
		}
		r.Files++
		r.Bytes += sizes[i]
		r.Resident += n
	}
	r.Took = time.Since(start)
	return r, nil
}

// chunk is how much of a file is mapped at once: a 10 GB shard needs no
// 10 GB of address space, and its vector stays small.
const chunk = 1 << 30

func residentOf(path string, size, page int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var resident int64
	vec := make([]byte, chunk/page)
	for off := int64(0); off < size; off += chunk {
		n := min(chunk, size-off)
		m, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return 0, err
		}
		pages := (n + page - 1) / page
		err = mincore(m, vec[:pages])
		unix.Munmap(m)
		if err != nil {
			return 0, err
		}
		for i, v := range vec[:pages] {
			if v&1 == 1 {
				resident += min(page, n-int64(i)*page)
			}
		}
	}
	return resident, nil
}

// mincore fills vec with a byte per page of m, its low bit set when the
// page is resident (x/sys has no wrapper for it on Linux).
func mincore(m []byte, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return e
	}
	return nil
}

// Evict asks the kernel to drop dir's files from the page cache
// (posix_fadvise DONTNEED): what a cold load starts from. Dirty pages
// stay until written.
func Evict(dir string) error {
	paths, _, err := files(dir)
	if err != nil {
		return err
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		unix.Fdatasync(int(f.Fd()))
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
