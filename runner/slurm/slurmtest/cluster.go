// Package slurmtest starts a real single-node Slurm cluster of a test's
// own: munged, slurmctld and slurmd from Debian's packages, with a
// generated slurm.conf (proctrack/linuxproc, select/cons_tres, two fake
// GPUs as GRES, 16 CPUs whatever the machine has, so that several tests'
// jobs run side by side) in a temporary folder, on free ports. It needs root, as CI
// has; a test skips with the reason where the cluster cannot start.
package slurmtest

import (
	"crypto/rand"
	_ "embed"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cluster is a running test cluster.
type Cluster struct {
	Dir       string
	Conf      string // SLURM_CONF
	Node      string // the one node's name
	Partition string
	pids      []string
}

// Env is the environment for a command that talks to the cluster.
func (c *Cluster) Env() []string { return append(os.Environ(), "SLURM_CONF="+c.Conf) }

// Start starts a cluster, or skips the test saying why it cannot.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("a test Slurm cluster needs root (slurmd runs jobs as their user); CI runs as root")
	}
	for _, p := range []string{"munged", "slurmctld", "slurmd", "sbatch", "scontrol"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed: .ci/run installs Debian's slurmctld, slurmd, slurm-client and munge", p)
		}
	}
	dir, err := os.MkdirTemp("", "glslurm")
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Node: host, Partition: "gl"}
	t.Cleanup(func() { c.stop(); os.RemoveAll(dir) })
	if err := c.start(); err != nil {
		c.stop()
		t.Skipf("the test Slurm cluster did not start: %v (logs in %s)", err, dir)
	}
	return c
}

func (c *Cluster) start() error {
	for _, d := range []string{"munge", "state", "spool"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o700); err != nil {
			return err
		}
	}
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(c.Dir, "munge/key"), key, 0o400); err != nil {
		return err
	}
	sock := filepath.Join(c.Dir, "munge/sock")
	if out, err := exec.Command("munged", "-f", "-S", sock, "--key-file="+filepath.Join(c.Dir, "munge/key"),
		"--log-file="+filepath.Join(c.Dir, "munge/log"), "--pid-file="+filepath.Join(c.Dir, "munge/pid"),
		"--seed-file="+filepath.Join(c.Dir, "munge/seed")).CombinedOutput(); err != nil {
		return fmt.Errorf("munged: %v: %s", err, out)
	}
	c.pids = append(c.pids, filepath.Join(c.Dir, "munge/pid"))
	// Two device nodes stand for two GPUs (slurmd drops file-less GPUs).
	for i := range 2 {
		dev := filepath.Join(c.Dir, fmt.Sprintf("gpu%d", i))
		if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(1<<8|3)); err != nil {
			return fmt.Errorf("mknod %s: %v", dev, err)
		}
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	conf := strings.NewReplacer("@CLUSTER@", fmt.Sprintf("gl%d", ports[0]), "@PORT0@", fmt.Sprint(ports[0]), "@PORT1@", fmt.Sprint(ports[1]),
		"@NODE@", c.Node, "@SOCK@", sock, "@CPUS@", fmt.Sprint(max(16, runtime.NumCPU())), "@GPUS@", "2", "@DIR@", c.Dir,
		"@PART@", c.Partition, "@EXTRA@", "").Replace(confTemplate)
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		return err
	}
	gres := fmt.Sprintf("Name=gpu File=%s/gpu[0-1]\n", c.Dir)
	if err := os.WriteFile(filepath.Join(c.Dir, "gres.conf"), []byte(gres), 0o644); err != nil {
		return err
	}
	// No cgroups are used (linuxproc, task/none): v1 pinned keeps slurmd
	// from wanting systemd and dbus for v2 on a cgroup2 machine.
	if err := os.WriteFile(filepath.Join(c.Dir, "cgroup.conf"), []byte("CgroupPlugin=cgroup/v1\n"), 0o644); err != nil {
		return err
	}
	env := append(os.Environ(), "SLURM_CONF="+c.Conf)
	for _, d := range [][]string{{"slurmctld", "-i"}, {"slurmd", "-N", c.Node}} {
		cmd := exec.Command(d[0], d[1:]...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", d[0], err, out)
		}
	}
	c.pids = append(c.pids, filepath.Join(c.Dir, "slurmctld.pid"), filepath.Join(c.Dir, "slurmd.pid"))
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cmd := exec.Command("sinfo", "-h", "-o", "%t")
		cmd.Env = env
		out, _ := cmd.Output()
		if strings.TrimSpace(string(out)) == "idle" {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the node did not become idle within 30 s")
}

// Run runs a Slurm command against the cluster and returns its output.
func (c *Cluster) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *Cluster) stop() {
	// Jobs first (their processes are children of slurmd's stepd), then
	// the daemons.
	cmd := exec.Command("scancel", "--partition="+c.Partition)
	cmd.Env = c.Env()
	cmd.Run()
	for i := len(c.pids) - 1; i >= 0; i-- {
		b, err := os.ReadFile(c.pids[i])
		if err != nil {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d", &pid); err != nil || pid <= 1 {
			continue
		}
		syscall.Kill(pid, syscall.SIGTERM)
		for range 100 {
			if syscall.Kill(pid, 0) != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func freePorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// confTemplate is slurm.conf with @NAME@ words to fill in; the device
// script fills in the same file.
//
//go:embed slurm.conf
var confTemplate string
