package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Processes returns the IDs of the cluster's processes, by part:
// "kube-apiserver", "etcd" (the control plane's), "kube-controller-manager"
// and "members" (the Pods' processes the simulated kubelet runs). The
// kubelet itself runs inside this process and is not among them. A process
// belongs to the cluster when its command line names one of the cluster's
// directories (envtest's certificate and data directories, or Dir).
func (c *Cluster) Processes() map[string][]int {
	cp := c.env.ControlPlane
	dirs := []string{cp.APIServer.CertDir, cp.Etcd.DataDir, c.Dir + string(filepath.Separator)}
	out := map[string][]int{}
	for pid, args := range commandLines() {
		if !slices.ContainsFunc(dirs, func(d string) bool { return d != "" && strings.Contains(args, d) }) {
			continue
		}
		// The controller-manager names the apiserver's certificates too,
		// so the binary decides before the directories do.
		part := "members"
		switch comm := filepath.Base(strings.SplitN(args, "\x00", 2)[0]); {
		case comm == "kube-apiserver" || comm == "kube-controller-manager":
			part = comm
		case cp.Etcd.DataDir != "" && strings.Contains(args, cp.Etcd.DataDir):
			part = "etcd"
		}
		out[part] = append(out[part], pid)
	}
	return out
}

// commandLines returns every process's command line (arguments joined by
// NUL), by ID.
func commandLines() map[int]string {
	out := map[int]string{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); err == nil && len(b) > 0 {
			out[pid] = string(b)
		}
	}
	return out
}
