package etcdmember

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
)

// dataDirWiped: the Pod is the one the member ran in, restarted in place
// after a hard power loss, and its data-dir guard refused to start etcd
// because the tmpfs came back empty. The member's data is gone as surely
// as if its Pod were: it goes through the same pod-loss replacement (live
// read, quorum check, cap, lease, gate), and until then the guard keeps it
// from ever running again under its old ID.
var dataDirWiped = podLoss{reason: "DataDirLost", confirmed: func(live *corev1.Pod, recorded types.UID) (bool, string) {
	if live == nil || live.UID != recorded {
		return podGone.confirmed(live, recorded)
	}
	if lost, msg := datadirguard.DataDirLost(live); lost {
		return true, "restarted on an empty memory-backed data dir (" + msg + ")"
	}
	return false, "runs again: its data-dir guard no longer reports the data dir lost"
}}

// dataDirLost reads the cached Pod's guard status; the flow confirms it live.
func dataDirLost(p *corev1.Pod) bool {
	lost, _ := datadirguard.DataDirLost(p)
	return lost
}
