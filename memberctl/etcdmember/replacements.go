package etcdmember

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
)

// The three kinds of replacement. Each builds a job for the one flow
// (replace); they differ only in what they delete, where they are counted
// and how they check that it is safe.

// replaceTerminalPod deletes a Pod the kubelet left Succeeded or Failed and
// recreates it on the same PVC (recreateTerminalPod). It is not
// quorum-gated: after a whole-cluster reboot every member is terminal and
// all must come back, and deleting a terminal Pod loses nothing (its PVC
// stays). The quorum state only orders the gate's queue.
func (s *run) replaceTerminalPod(ctx context.Context, p *corev1.Pod) (ctrl.Result, error) {
	cause := replacement.Cause{Phase: string(p.Status.Phase), Reason: pod.TerminationReason(p), Shutdown: pod.IsShutdownTermination(p)}
	died := fmt.Sprintf("Pod %s is %s (reason %s)", p.Name, cause.Phase, orNone(cause.Reason))
	// Backfill the UID before anything else: a memory member's pod-loss
	// check must see it even if this Pod was never recorded.
	s.m.Status.PodName, s.m.Status.PodUID = p.Name, p.UID
	return s.replace(ctx, job{
		action: gate.TerminalPodDelete, cause: cause, podUID: p.UID, died: died,
		check: func(ctx context.Context) (safety, error) {
			lost, view, err := s.quorumLostCached(ctx)
			return safety{ok: true, quorumLost: lost, quorum: view}, err
		},
		remove: func(ctx context.Context) error { return s.cl.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}) },
		then:   s.recreateTerminalPod,
		announce: func(total int32) {
			evType := corev1.EventTypeNormal
			if !cause.Shutdown {
				evType = corev1.EventTypeWarning
			}
			s.cl.Recorder.Eventf(s.m, evType, "ReplacingTerminalPod",
				"%s: %s; the kubelet will not restart it; deleted it to recreate it on the same storage (replacement %d)",
				died, orNone(p.Status.Message), total)
		},
	}, memberLedger{s})
}

// recreateTerminalPod creates the successor of the terminal Pod just
// deleted, in the same reconcile. The apiserver removes a Succeeded or
// Failed Pod at once (no grace period), and waiting for its deletion to
// reach the cache and requeue the member added 0.8 s p50 and 2.5 s p99 to
// every paced step of a fleet heal at load 17-36 (make bench, DELETED to
// ADDED). A memory member's successor is a new member, and a lost claim a
// removal: the next reconcile decides those, as before.
func (s *run) recreateTerminalPod(ctx context.Context) (ctrl.Result, error) {
	if isMemory(s.m) {
		return ctrl.Result{}, nil
	}
	if lost, err := s.claimLost(ctx); err != nil || lost {
		return ctrl.Result{}, err
	}
	return s.createPod(ctx, pod.Syncer.Recreate)
}

// deletedByUs reports whether p is the Pod that m's last replacement
// deleted while m already records its successor: the cache lags behind
// recreateTerminalPod.
func deletedByUs(m *v1alpha1.EtcdMember, p *corev1.Pod) bool {
	st := m.Status.Replacement
	return st != nil && st.LastPodUID == p.UID && m.Status.PodUID != "" && m.Status.PodUID != p.UID
}

// replaceCrashLooping removes a member whose etcd keeps crashing, when
// quorum holds without it; the cluster reconciler then adds a new member.
func (s *run) replaceCrashLooping(ctx context.Context, p *corev1.Pod) (ctrl.Result, error) {
	return s.removeMember(ctx, job{
		action: gate.CrashLoopReplace,
		cause:  replacement.Cause{Phase: string(p.Status.Phase), Reason: "CrashLoop"},
		podUID: p.UID,
		died:   fmt.Sprintf("etcd in Pod %s keeps crashing (%d restarts)", p.Name, restarts(p)),
		check:  s.quorumWithoutSafety,
	}, "ReplacingCrashLoopingMember", func() string { return "quorum holds without it" })
}

// podLoss is one way a memory-backed member's data is known to be gone.
// confirmed is asked with a LIVE read of the Pod (nil when absent), so a
// member is never removed because the label-filtered cache missed its Pod.
type podLoss struct {
	// reason is the cause recorded, and the metric's reason label.
	reason    string
	confirmed func(live *corev1.Pod, recorded types.UID) (lost bool, what string)
}

// podGone: the Pod the member last ran in is absent or has another UID.
var podGone = podLoss{reason: "PodLost", confirmed: func(live *corev1.Pod, recorded types.UID) (bool, string) {
	switch {
	case live == nil:
		return true, "is gone"
	case live.UID != recorded:
		return true, fmt.Sprintf("was replaced by another Pod (UID %s)", live.UID)
	}
	return false, "still exists although the cache does not list it (were its labels changed?)"
}}

// replaceLostMemoryMember removes a memory-backed member whose data went
// with its tmpfs: it must come back as a new member with a new ID. Every
// pod-loss trigger calls it with its own podLoss.
func (s *run) replaceLostMemoryMember(ctx context.Context, loss podLoss) (ctrl.Result, error) {
	uid := s.m.Status.PodUID
	what := ""
	return s.removeMember(ctx, job{
		action: gate.PodLossReplace, cause: replacement.Cause{Reason: loss.reason}, podUID: uid,
		died: fmt.Sprintf("memory-backed Pod UID %s lost (%s)", uid, loss.reason),
		check: func(ctx context.Context) (safety, error) {
			live, err := s.livePod(ctx)
			if err != nil {
				return safety{}, err
			}
			lost := false
			if lost, what = loss.confirmed(live, uid); !lost {
				return safety{why: "its Pod " + what}, nil
			}
			// A Pod gone from the API may still run on a node that is
			// unreachable, so the member itself is asked too; one restarted
			// on a wiped data dir is held back by its guard and cannot.
			gone := live == nil || live.UID != uid
			return s.podLossSafety(ctx, gone)
		},
	}, "MemoryMemberLost", func() string { return "its Pod " + what + ", and its in-memory data with it" })
}

// removeMember finishes a job that deletes the EtcdMember itself, counted
// and serialized on the EtcdCluster.
func (s *run) removeMember(ctx context.Context, j job, event string, because func() string) (ctrl.Result, error) {
	l, err := s.clusterLedger(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	j.remove = func(ctx context.Context) error {
		return s.cl.Client.Delete(ctx, s.m, client.Preconditions{UID: &s.m.UID})
	}
	j.announce = func(total int32) {
		s.warn(event, "%s and %s; removing member %s so that a new member with a new ID replaces it (replacement %d of etcd cluster %s)",
			j.died, because(), s.m.Name, total, s.m.Spec.ClusterName)
	}
	return s.replace(ctx, j, l)
}

// quorumWithoutSafety: replace only if live membership and health say the
// other voters keep quorum (a crash-looping member, a member on a lost
// node: neither is asked itself).
func (s *run) quorumWithoutSafety(ctx context.Context) (safety, error) {
	// Only holdsWithout matters here: the member's own answer is not asked.
	q, err := s.liveQuorum(ctx, quorumAsk{steadyOnly: true})
	if err != nil {
		return safety{}, err
	}
	return quorumWithout(q)
}

func quorumWithout(q quorumView) (safety, error) {
	switch {
	case q.voters == 0:
		return safety{why: "no other member to hold quorum"}, nil
	case !q.listed:
		return safety{why: "etcd membership unreadable"}, nil
	case !q.holdsWithout():
		return safety{why: q.String()}, nil
	}
	return safe(false)
}

// podLossSafety: remove only if quorum holds without the member, or is
// already lost and the cluster recovers from a survivor by itself (see
// lostQuorumSafety); never when etcd did not answer at all, which may be
// our network rather than etcd.
func (s *run) podLossSafety(ctx context.Context, askSelf bool) (safety, error) {
	q, err := s.liveQuorum(ctx, quorumAsk{self: askSelf})
	switch {
	case err != nil:
		return safety{}, err
	case !q.answered():
		return safety{why: "no etcd member answered; not removing a member on a guess"}, nil
	case q.holdsWithout():
		return safe(false)
	case q.lost():
		return s.lostQuorumSafety(ctx, q)
	}
	return safety{why: "quorum holds only with it: " + q.String()}, nil
}

// lostQuorumSafety decides for a member whose data is gone while its
// cluster has no quorum. With spec.recovery.quorumLoss FromSurvivor the
// cluster recovers by itself, and marking a member that cannot come back
// costs nothing and lets the gate serve the cluster first. With Manual
// (the default) a person decides what becomes of a cluster without
// quorum, so nothing is marked: the members stay as they are until the
// person recovers from a survivor (the annotation, which removes them
// itself), restores, or brings quorum back, after which the member is
// replaced as usual.
func (s *run) lostQuorumSafety(ctx context.Context, q quorumView) (safety, error) {
	ec, err := s.parent(ctx)
	if err != nil {
		return safety{}, err
	}
	if ec != nil && ec.Spec.Recovery.RecoversFromSurvivor() {
		return safe(true)
	}
	return safety{why: "the cluster has no quorum (" + q.String() + ") and spec.recovery.quorumLoss is Manual: " +
		"no member is removed until a person acts (see the EtcdCluster's Available condition and docs/operations.md, Power loss)"}, nil
}

// livePod reads the member's Pod from the apiserver; nil when absent.
func (s *run) livePod(ctx context.Context) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	err := s.cl.Reader.Get(ctx, types.NamespacedName{Namespace: s.m.Namespace, Name: s.m.Name}, p)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return p, err
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
