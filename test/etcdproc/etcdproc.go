// Package etcdproc runs one real etcd process (KUBEBUILDER_ASSETS/etcd,
// built by test/tools/assets.sh) on loopback for a test, for packages that
// test etcd's clients without a kube-apiserver. Tests using it hold the
// shared heavy-run lock like any other test that starts etcd.
package etcdproc

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/test/sandbox/proc"
)

// Member is a running single-member etcd.
type Member struct {
	ClientURL, PeerURL string
	// InitialCluster is "<name>=<PeerURL>".
	InitialCluster string
}

// Start runs etcd named name with its data in dataDir (used as it is: a
// restored one keeps its cluster) and token as --initial-cluster-token,
// stopped when the test ends, with extraArgs after its own flags (e.g.
// --quota-backend-bytes). It skips the test without KUBEBUILDER_ASSETS.
func Start(t *testing.T, dataDir, name, token string, extraArgs ...string) Member {
	t.Helper()
	m := Reserve(t, name)
	StartAt(t, m, dataDir, name, token, extraArgs...)
	return m
}

// Reserve picks the free loopback ports of a member named name, for a
// restore that must know its peer URL before etcd starts.
func Reserve(t *testing.T, name string) Member {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set (test/tools/assets.sh)")
	}
	var urls [2]string
	for i := range urls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		urls[i] = "http://127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		_ = l.Close()
	}
	return Member{ClientURL: urls[0], PeerURL: urls[1], InitialCluster: name + "=" + urls[1]}
}

// StartAt runs etcd for a Reserved member.
func StartAt(t *testing.T, m Member, dataDir, name, token string, extraArgs ...string) {
	t.Helper()
	args := append([]string{"--name=" + name, "--data-dir=" + dataDir,
		"--listen-client-urls=" + m.ClientURL, "--advertise-client-urls=" + m.ClientURL,
		"--listen-peer-urls=" + m.PeerURL, "--initial-advertise-peer-urls=" + m.PeerURL,
		"--initial-cluster=" + m.InitialCluster, "--initial-cluster-token=" + token}, extraArgs...)
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcd"), args...)
	log, err := os.Create(dataDir + ".log")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	p, err := proc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(5 * time.Second) })
}
