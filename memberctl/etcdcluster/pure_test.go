package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// Pure decision logic, table-driven; no apiserver involved.

var _ = DescribeTable("removalKeepsQuorum",
	func(voters, ready int32, victimVotes, victimReady, want bool) {
		Expect(removalKeepsQuorum(voters, ready, victimVotes, victimReady)).To(Equal(want))
	},
	Entry("3 healthy voters, remove one", int32(3), int32(3), true, true, true),
	Entry("3 voters, one other down, remove a ready one", int32(3), int32(2), true, true, false),
	Entry("3 voters, remove the one that is down", int32(3), int32(2), true, false, true),
	Entry("a learner never matters", int32(3), int32(1), false, true, true),
	Entry("the last voter", int32(1), int32(1), true, true, false),
	Entry("5 voters, one other down", int32(5), int32(4), true, true, true),
	Entry("5 voters, two others down", int32(5), int32(3), true, true, false),
)

var _ = DescribeTable("availability",
	func(h health, aStatus metav1.ConditionStatus, aReason string, dStatus metav1.ConditionStatus, dReason string) {
		a, d := availability(h)
		Expect([]any{a.status, a.reason}).To(Equal([]any{aStatus, aReason}), "Available: %s", a.message)
		Expect([]any{d.status, d.reason}).To(Equal([]any{dStatus, dReason}), "Degraded: %s", d.message)
	},
	Entry("paused with a dormant member", health{desired: 0, dormant: "ec-x", latched: true},
		metav1.ConditionFalse, v1alpha1.ReasonPaused, metav1.ConditionFalse, v1alpha1.ReasonPaused),
	Entry("created at 0", health{desired: 0},
		metav1.ConditionFalse, v1alpha1.ReasonPaused, metav1.ConditionFalse, v1alpha1.ReasonPaused),
	Entry("bootstrapping", health{desired: 3, running: 1},
		metav1.ConditionFalse, v1alpha1.ReasonWaitingForSeed, metav1.ConditionFalse, v1alpha1.ReasonWaitingForSeed),
	Entry("seed ready but silent", health{desired: 3, running: 1, ready: 1, probed: true},
		metav1.ConditionFalse, v1alpha1.ReasonClusterUnreachable, metav1.ConditionFalse, v1alpha1.ReasonWaitingForSeed),
	Entry("bootstrap failed", health{desired: 3, running: 1, terminal: v1alpha1.ReasonBootstrapFailed, probed: true},
		metav1.ConditionFalse, v1alpha1.ReasonBootstrapFailed, metav1.ConditionFalse, v1alpha1.ReasonWaitingForSeed),
	Entry("just discovered", health{desired: 1, running: 1, ready: 1, voters: 1, readyVoters: 1, latched: true, probed: true, reachable: true, discovered: true},
		metav1.ConditionTrue, v1alpha1.ReasonClusterDiscovered, metav1.ConditionFalse, v1alpha1.ReasonQuorumHealthy),
	Entry("all ready", health{desired: 3, running: 3, ready: 3, voters: 3, readyVoters: 3, latched: true, probed: true, reachable: true},
		metav1.ConditionTrue, v1alpha1.ReasonQuorumHealthy, metav1.ConditionFalse, v1alpha1.ReasonQuorumHealthy),
	Entry("one of three down", health{desired: 3, running: 3, ready: 2, voters: 3, readyVoters: 2, latched: true, probed: true, reachable: true},
		metav1.ConditionTrue, v1alpha1.ReasonQuorumAvailable, metav1.ConditionTrue, v1alpha1.ReasonMembersUnhealthy),
	Entry("a learner not ready yet", health{desired: 4, running: 4, ready: 3, voters: 3, readyVoters: 3, latched: true, probed: true, reachable: true},
		metav1.ConditionTrue, v1alpha1.ReasonQuorumAvailable, metav1.ConditionTrue, v1alpha1.ReasonMembersUnhealthy),
	Entry("two of three down", health{desired: 3, running: 3, ready: 1, voters: 3, readyVoters: 1, latched: true, probed: true, reachable: true},
		metav1.ConditionFalse, v1alpha1.ReasonQuorumLost, metav1.ConditionTrue, v1alpha1.ReasonQuorumLost),
	Entry("members ready but etcd silent", health{desired: 3, running: 3, ready: 3, voters: 3, readyVoters: 3, latched: true, probed: true},
		metav1.ConditionFalse, v1alpha1.ReasonClusterUnreachable, metav1.ConditionTrue, v1alpha1.ReasonClusterUnreachable),
	Entry("quorum lost wins over unreachable", health{desired: 3, running: 3, voters: 3, latched: true, probed: true},
		metav1.ConditionFalse, v1alpha1.ReasonQuorumLost, metav1.ConditionTrue, v1alpha1.ReasonQuorumLost),
	Entry("scaling 5→3 counts against the 5 voters still there", health{desired: 3, running: 5, ready: 2, voters: 5, readyVoters: 2, latched: true, probed: true, reachable: true},
		metav1.ConditionFalse, v1alpha1.ReasonQuorumLost, metav1.ConditionTrue, v1alpha1.ReasonQuorumLost),
	Entry("all replaced at once: nothing running", health{desired: 3, latched: true},
		metav1.ConditionFalse, v1alpha1.ReasonQuorumLost, metav1.ConditionTrue, v1alpha1.ReasonQuorumLost),
	Entry("deadline exceeded, quorum fine", health{desired: 4, running: 4, ready: 3, voters: 3, readyVoters: 3, latched: true, probed: true, reachable: true, terminal: v1alpha1.ReasonDeadlineExceeded},
		metav1.ConditionFalse, v1alpha1.ReasonDeadlineExceeded, metav1.ConditionTrue, v1alpha1.ReasonMembersUnhealthy),
)

var _ = Describe("decideLock", func() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	spec3 := v1alpha1.EtcdClusterObservedSpec{Replicas: 3, Version: "3.6.16"}
	spec5 := v1alpha1.EtcdClusterObservedSpec{Replicas: 5, Version: "3.6.16"}
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }

	DescribeTable("decisions",
		func(in lockInput, want lockAction, reason string) {
			in.now = now
			got, gotReason := decideLock(in)
			Expect(got).To(Equal(want))
			Expect(gotReason).To(Equal(reason))
		},
		Entry("first sight", lockInput{spec: spec3},
			lockSnapshot, v1alpha1.ReasonInitialSnapshot),
		Entry("complete and unchanged", lockInput{spec: spec3, observed: &spec3, complete: true, latched: true, deadline: at(time.Minute)},
			lockReconciled, v1alpha1.ReasonReconciled),
		Entry("complete, spec edited", lockInput{spec: spec5, observed: &spec3, complete: true, latched: true},
			lockSnapshot, v1alpha1.ReasonSpecChanged),
		Entry("in flight: an edit waits", lockInput{spec: spec5, observed: &spec3, latched: true, deadline: at(time.Minute)},
			lockKeep, ""),
		Entry("in flight without a deadline (gap fill)", lockInput{spec: spec3, observed: &spec3, latched: true},
			lockKeep, ""),
		Entry("gap fill, spec edited: nothing would release the lock", lockInput{spec: spec5, observed: &spec3, latched: true},
			lockSnapshot, v1alpha1.ReasonSpecChanged),
		Entry("past deadline, never formed", lockInput{spec: spec5, observed: &spec3, deadline: at(-time.Second)},
			lockTerminal, v1alpha1.ReasonBootstrapFailed),
		Entry("past deadline at 0 replicas is not a bootstrap failure", lockInput{spec: spec3, observed: &v1alpha1.EtcdClusterObservedSpec{}, deadline: at(-time.Second)},
			lockSnapshot, v1alpha1.ReasonRetryAfterDeadline),
		Entry("deadline reached exactly", lockInput{spec: spec3, observed: &spec3, latched: true, deadline: at(0)},
			lockTerminal, v1alpha1.ReasonDeadlineExceeded),
		Entry("past deadline, spec edited", lockInput{spec: spec5, observed: &spec3, latched: true, deadline: at(-time.Hour)},
			lockSnapshot, v1alpha1.ReasonRetryAfterDeadline),
		Entry("deadline removed after DeadlineExceeded", lockInput{spec: spec3, observed: &spec3, latched: true, progressing: v1alpha1.ReasonDeadlineExceeded},
			lockRetry, v1alpha1.ReasonRetryAfterDeadline),
		Entry("deadline moved out after BootstrapFailed", lockInput{spec: spec3, observed: &spec3, deadline: at(time.Hour), progressing: v1alpha1.ReasonBootstrapFailed},
			lockRetry, v1alpha1.ReasonRetryAfterDeadline),
	)

	It("compares quantities semantically", func() {
		a := v1alpha1.EtcdClusterObservedSpec{Replicas: 1, Version: "3.6.16", Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}}
		b := a.DeepCopy()
		b.Storage.Size = resource.MustParse("1024Mi")
		got, _ := decideLock(lockInput{spec: *b, observed: &a, complete: true, latched: true, now: now})
		Expect(got).To(Equal(lockReconciled))
	})
})

var _ = Describe("snapshotSpec and progressDeadline", func() {
	It("defaults replicas and copies what members are templated from", func() {
		s := &v1alpha1.EtcdClusterSpec{Version: "3.6.16", Options: &v1alpha1.EtcdOptions{SnapshotCount: ptr.To(int64(5))}}
		o := snapshotSpec(s)
		Expect(o.Replicas).To(Equal(v1alpha1.DefaultReplicas))
		Expect(o.Options).NotTo(BeIdenticalTo(s.Options), "a deep copy")
		s.Replicas = ptr.To(int32(0))
		Expect(snapshotSpec(s).Replicas).To(Equal(int32(0)))
	})
	It("uses progressDeadlineSeconds, defaulting to 600", func() {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		ec := &v1alpha1.EtcdCluster{}
		Expect(progressDeadline(ec, now).Time).To(Equal(now.Add(600 * time.Second)))
		ec.Spec.ProgressDeadlineSeconds = 30
		Expect(progressDeadline(ec, now).Time).To(Equal(now.Add(30 * time.Second)))
	})
})

var _ = DescribeTable("initialCluster",
	func(members []etcd.Member, want string) { Expect(initialCluster(members)).To(Equal(want)) },
	Entry("sorted, names from etcd", []etcd.Member{
		{Name: "ec-b", PeerURLs: []string{"http://ec-b.ec.ns.svc:2380"}},
		{Name: "ec-a", PeerURLs: []string{"http://ec-a.ec.ns.svc:2380"}},
	}, "ec-a=http://ec-a.ec.ns.svc:2380,ec-b=http://ec-b.ec.ns.svc:2380"),
	Entry("an unstarted learner is named after its URL", []etcd.Member{
		{Name: "ec-a", PeerURLs: []string{"https://ec-a.ec.ns.svc:2380"}},
		{PeerURLs: []string{"https://ec-c.ec.ns.svc:2380"}, IsLearner: true},
	}, "ec-a=https://ec-a.ec.ns.svc:2380,ec-c=https://ec-c.ec.ns.svc:2380"),
	Entry("URLs verbatim, every one of them", []etcd.Member{
		{Name: "old", PeerURLs: []string{"http://10.0.0.1:2380", "http://old.example:2380"}},
	}, "old=http://10.0.0.1:2380,old=http://old.example:2380"),
)

var _ = Describe("newest", func() {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	m := func(name string, ts metav1.Time) *v1alpha1.EtcdMember {
		return &v1alpha1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ts}}
	}
	It("picks the latest creation time, then the greatest name", func() {
		Expect(newest(nil)).To(BeNil())
		Expect(newest([]*v1alpha1.EtcdMember{m("z", t0), m("a", t1), m("b", t0)}).Name).To(Equal("a"))
		Expect(newest([]*v1alpha1.EtcdMember{m("c", t1), m("d", t1), m("a", t0)}).Name).To(Equal("d"))
	})
})

var _ = DescribeTable("memberTLS",
	func(in *v1alpha1.TLSSpec, want *v1alpha1.MemberTLS) { Expect(memberTLS(in)).To(Equal(want)) },
	Entry("none", nil, nil),
	Entry("empty", &v1alpha1.TLSSpec{}, nil),
	Entry("server-only client TLS", &v1alpha1.TLSSpec{Client: &v1alpha1.ClientTLSSpec{ServerSecretRef: ref("srv")}},
		&v1alpha1.MemberTLS{ClientServerSecretRef: "srv"}),
	Entry("client mTLS and peer", &v1alpha1.TLSSpec{
		Client: &v1alpha1.ClientTLSSpec{ServerSecretRef: ref("srv"), OperatorClientSecretRef: ptr.To(ref("op"))},
		Peer:   &v1alpha1.PeerTLSSpec{SecretRef: ref("peer")},
	}, &v1alpha1.MemberTLS{ClientServerSecretRef: "srv", ClientMTLS: true, OperatorClientSecretRef: "op", PeerSecretRef: "peer"}),
)

var _ = Describe("small helpers", func() {
	It("keeps the sooner requeue", func() {
		a, b := ctrl.Result{RequeueAfter: time.Second}, ctrl.Result{RequeueAfter: time.Minute}
		Expect(shortest(a, b)).To(Equal(a))
		Expect(shortest(b, a)).To(Equal(a))
		Expect(shortest(ctrl.Result{}, b)).To(Equal(b))
		Expect(shortest(b, ctrl.Result{})).To(Equal(b))
	})
	It("retries promotion only on etcd's not-yet errors", func() {
		Expect(retryablePromote(fmt.Errorf("promote: %w", rpctypes.ErrUnhealthy))).To(BeTrue())
		Expect(retryablePromote(fmt.Errorf("promote: %w", rpctypes.ErrMemberLearnerNotReady))).To(BeTrue())
		Expect(retryablePromote(errors.New("rpc error: code = FailedPrecondition desc = etcdserver: can only promote a learner member which is in sync with leader"))).To(BeTrue())
		Expect(retryablePromote(context.DeadlineExceeded)).To(BeTrue())
		Expect(retryablePromote(errors.New("permission denied"))).To(BeFalse())
	})
	It("names the cluster token after the incarnation", func() {
		ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u-1"}}
		Expect(clusterToken(ec)).To(Equal("ns-c-u-1"))
	})
})

func ref(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
