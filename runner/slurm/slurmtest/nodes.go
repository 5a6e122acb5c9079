package slurmtest

import (
	_ "embed"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Nodes is a running Slurm cluster of several nodes on this host (see
// nodes.sh): the controller and each node in a network namespace of its
// own, on a /24 the host's namespace refuses (an unreachable route), each
// node with its own hostname (n1, n2, ...), address and fake GPUs.
type Nodes struct {
	Dir       string
	Conf      string // SLURM_CONF
	Bin       string // the client wrappers: put first on PATH
	Net       string // the /24's first three numbers: "10.77.3"
	Prefix    string // the namespaces' prefix: PREFIX-ctl, PREFIX-n1, ...
	Partition string
	Count     int // nodes
	GPUs      int // fake GPUs a node
	env       []string
}

//go:embed nodes.sh
var nodesScript []byte

// claimed are the /24s this process's clusters hold.
var claimed sync.Map

// StartNodes starts a cluster of n nodes with gpus fake GPUs each (one
// partition, "nodes", of them all; partitions such as "a=n[1-2]
// b=n[3-5]" split them instead), or
// skips the test saying why it cannot; it is torn down when the test
// ends. Each cluster takes a /24 of 10.77.0.0/16 no other holds (the
// guard route is the claim: adding it fails where one is there).
func StartNodes(t testing.TB, n, gpus int, partitions ...string) *Nodes {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("a multi-node test Slurm cluster needs root (network namespaces, slurmd); CI runs as root")
	}
	for _, p := range []string{"munged", "slurmctld", "slurmd", "sbatch", "ip", "unshare"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed: .ci/run installs Debian's slurmctld, slurmd, slurm-client, munge and iproute2", p)
		}
	}
	if err := exec.Command("ip", "netns", "list").Run(); err != nil {
		t.Skipf("network namespaces are not available here (ip netns list: %v)", err)
	}
	dir, err := os.MkdirTemp("", "glnodes")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "nodes.sh")
	if err := os.WriteFile(script, nodesScript, 0o755); err != nil {
		t.Fatal(err)
	}
	var c *Nodes
	for k := (os.Getpid() % 200) + 20; ; k++ {
		if k > 250 {
			t.Skip("no free /24 in 10.77.0.0/16 for a test cluster (each holds an unreachable route there)")
		}
		if _, loaded := claimed.LoadOrStore(k, true); loaded || routed(k) {
			continue
		}
		c = &Nodes{Dir: filepath.Join(dir, "c"), Net: fmt.Sprintf("10.77.%d", k), Prefix: fmt.Sprintf("gln%d", k),
			Partition: "nodes", Count: n, GPUs: gpus}
		break
	}
	c.Conf = filepath.Join(c.Dir, "slurm.conf")
	c.Bin = filepath.Join(c.Dir, "bin")
	c.env = []string{"GLN_DIR=" + c.Dir, "GLN_NODES=" + fmt.Sprint(n), "GLN_GPUS=" + fmt.Sprint(gpus),
		"GLN_PREFIX=" + c.Prefix, "GLN_NET=" + c.Net, "GLN_PARTITIONS=" + strings.Join(partitions, " ")}
	t.Cleanup(func() {
		c.script("stop")
		os.RemoveAll(dir)
	})
	t0 := time.Now()
	if out, err := c.script("start"); err != nil {
		c.script("stop")
		t.Skipf("the multi-node test cluster did not start: %v: %s", err, out)
	}
	t.Logf("%d Slurm nodes up in %.1f s on %s.0/24 (namespaces %s-*)", n, time.Since(t0).Seconds(), c.Net, c.Prefix)
	return c
}

// routed says whether the host already routes 10.77.k.0/24 (another
// process's cluster).
func routed(k int) bool {
	out, _ := exec.Command("ip", "route", "show", fmt.Sprintf("10.77.%d.0/24", k)).Output()
	return strings.TrimSpace(string(out)) != ""
}

func (c *Nodes) script(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(filepath.Dir(c.Dir), "nodes.sh"), args...)
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Env is the environment for a command that talks to the cluster: its
// SLURM_CONF, and the wrappers first on PATH (every Slurm client then
// runs inside the controller's namespace).
func (c *Nodes) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.Conf, "PATH="+c.Bin+":"+os.Getenv("PATH"))
}

// Node acts on node name (n1, n2, ...): link-down, link-up, kill-slurmd,
// crash, start, down.
func (c *Nodes) Node(t testing.TB, action, name string) {
	t.Helper()
	if out, err := c.script("node", action, name); err != nil {
		t.Fatalf("node %s %s: %v: %s", action, name, err, out)
	}
}

// Run runs a Slurm client command against the cluster.
func (c *Nodes) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.Bin, name), args...)
	cmd.Env = c.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Addr is a node's address ("ctl" is the controller's).
func (c *Nodes) Addr(name string) string {
	if name == "ctl" {
		return c.Net + ".1"
	}
	var i int
	fmt.Sscanf(name, "n%d", &i)
	return fmt.Sprintf("%s.%d", c.Net, 10+i)
}

// Login wraps a command to run on the cluster's login node: the
// controller's namespace, where the nodes' addresses are reachable and
// their names resolve (its own /etc/hosts, bind-mounted in a mount
// namespace of its own: the host's file is untouched).
func (c *Nodes) Login(name string, args ...string) *exec.Cmd {
	return c.in(c.Prefix+"-ctl", name, args...)
}

// On wraps a command to run on a node (n1, n2, ...), outside any job: a
// stand-in for a daemon the cluster runs there, such as dcgm-exporter.
func (c *Nodes) On(node, name string, args ...string) *exec.Cmd {
	return c.in(c.Prefix+"-"+node, name, args...)
}

func (c *Nodes) in(ns, name string, args ...string) *exec.Cmd {
	sh := `mount --bind "$GLN_HOSTS" /etc/hosts && exec "$@"`
	all := append([]string{"netns", "exec", ns, "unshare", "--mount", "sh", "-c", sh, "sh", name}, args...)
	cmd := exec.Command("ip", all...)
	cmd.Env = append(c.Env(), "GLN_HOSTS="+filepath.Join(c.Dir, "hosts"))
	return cmd
}

// Unreachable checks the guard: from the host's namespace, the
// controller's address must fail at once (no route), never time out
// waiting on a packet that left.
func (c *Nodes) Unreachable() error {
	t0 := time.Now()
	conn, err := net.DialTimeout("tcp", c.Net+".1:7917", 3*time.Second)
	if err == nil {
		conn.Close()
		return fmt.Errorf("%s.1:7917 answered from the host's namespace", c.Net)
	}
	if d := time.Since(t0); d > time.Second || !strings.Contains(err.Error(), "unreachable") && !strings.Contains(err.Error(), "no route") {
		return fmt.Errorf("connecting to %s.1 from the host's namespace: %v after %s; want no route at once", c.Net, err, d.Round(time.Millisecond))
	}
	return nil
}
