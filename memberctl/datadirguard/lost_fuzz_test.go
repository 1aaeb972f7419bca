package datadirguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
)

// kubeletMessageCap is what the kubelet keeps of a container's termination
// message; the guard writes no more.
const kubeletMessageCap = 4096

// FuzzDataDirLost checks DataDirLost, which reads the guard's termination
// message from a Pod's status: whoever controls the workload cluster can
// write that status, and a true answer has the member replaced.
//   - round trip: what a real guard writes on a wiped data dir (for any
//     Pod UID, which it records in its marker and repeats) is recognised,
//     from the current or the last state, with the message unchanged;
//   - any status: lost only for the guard's own init container, a non-zero
//     exit and a message in the guard's format ("DataDirLost:"); the
//     message returned is then that one, at most kubeletMessageCap bytes
//     of it, and "" otherwise.
func FuzzDataDirLost(f *testing.F) {
	f.Add("5f0c1a52-7e2b-4b9a-9a53-2d1c8f0e6a11", "DataDirLost: data dir /var/lib/etcd has no etcd data", int32(1), datadirguard.ContainerName, uint8(0))
	f.Add("", "DataDirLost: x", int32(0), datadirguard.ContainerName, uint8(1))
	f.Add("uid", "DataDirLostButNotReally", int32(1), datadirguard.ContainerName, uint8(0))
	f.Add("uid", "datadir-guard: read marker: input/output error", int32(2), datadirguard.ContainerName, uint8(0))
	f.Add("uid", "DataDirLost: forged", int32(137), "etcd", uint8(0))
	f.Add(strings.Repeat("u", 5000), "DataDirLost: "+strings.Repeat("y", 1<<20), int32(-1), datadirguard.ContainerName, uint8(3))
	f.Add("\xff\xfe", " DataDirLost: leading space", int32(1), datadirguard.ContainerName, uint8(2))
	f.Fuzz(func(t *testing.T, podUID, message string, exitCode int32, name string, where uint8) {
		written := guardMessage(t, podUID)
		if !strings.HasPrefix(written, datadirguard.MessagePrefix+": ") || len(written) > kubeletMessageCap {
			t.Fatalf("the guard wrote %d bytes %.200q", len(written), written)
		}
		real := &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: written}
		for _, p := range []*corev1.Pod{guardPod(real, nil), guardPod(nil, real)} {
			if lost, msg := datadirguard.DataDirLost(p); !lost || msg != written {
				t.Fatalf("the guard's own message %.200q read back as %v, %.200q", written, lost, msg)
			}
		}

		// The status as the fuzzer writes it: the state now or the last
		// one (where&1), a guard that fails now for another reason beside
		// it (where&2), under any container name.
		st := &corev1.ContainerStateTerminated{ExitCode: exitCode, Message: message}
		p := guardPod(st, nil)
		if where&1 != 0 {
			other := &corev1.ContainerStateTerminated{ExitCode: 0}
			if where&2 != 0 {
				other = &corev1.ContainerStateTerminated{ExitCode: 2, Message: "datadir-guard: read marker: EIO"}
			}
			p = guardPod(other, st)
		}
		p.Status.InitContainerStatuses[0].Name = name
		want := name == datadirguard.ContainerName && exitCode != 0 && strings.HasPrefix(message, datadirguard.MessagePrefix+":")
		lost, msg := datadirguard.DataDirLost(p)
		switch {
		case lost != want:
			t.Fatalf("DataDirLost(%q, exit %d, %.200q) = %v, want %v", name, exitCode, message, lost, want)
		case !lost && msg != "":
			t.Fatalf("not lost, yet message %.200q", msg)
		case lost && (len(msg) > kubeletMessageCap || !strings.HasPrefix(message, msg)):
			t.Fatalf("lost with message %d bytes %.200q, want at most %d bytes of %.200q", len(msg), msg, kubeletMessageCap, message)
		case lost && len(message) <= kubeletMessageCap && msg != message:
			t.Fatalf("lost with message %.200q, want %.200q", msg, message)
		}
	})
}

// guardMessage runs the guard on a Pod that started once (its first run
// wrote the marker) and whose data dir was then wiped, and returns its
// termination message.
func guardMessage(t *testing.T, podUID string) string {
	t.Helper()
	root := t.TempDir()
	cfg := datadirguard.Config{DataDir: filepath.Join(root, "data"), MarkerDir: root,
		TerminationMessagePath: filepath.Join(root, "termination-log"), PodUID: podUID,
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	if err := datadirguard.Run(cfg); err != nil {
		t.Fatalf("first start: %v", err)
	}
	if err := datadirguard.Run(cfg); !errors.Is(err, datadirguard.ErrDataDirLost) {
		t.Fatalf("start on a wiped data dir: %v, want ErrDataDirLost", err)
	}
	b, err := os.ReadFile(cfg.TerminationMessagePath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
