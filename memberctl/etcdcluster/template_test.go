package etcdcluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
)

// Rolling a template change (resources, options, ...) into the running
// members. The harness plays the member reconciler: a re-templated member
// restarts (not Ready), then runs a Pod of its new template hash and is
// Ready again.
var _ = Describe("template roll", func() {
	var h *harness
	ctx := context.Background()
	BeforeEach(func() { h = newHarness() })

	report := func(version string) {
		GinkgoHelper()
		for _, m := range h.members() {
			h.setMemberStatus(&m, func(s *v1alpha1.EtcdMemberStatus) { s.Version = version })
		}
	}
	// retemplate raises the quota and changes the resources, as a user would.
	retemplate := func(ec *v1alpha1.EtcdCluster, version string) {
		GinkgoHelper()
		cur := h.get(ec)
		cur.Spec.Options = &v1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To(int64(4 << 30))}
		cur.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
		if version != "" {
			cur.Spec.Version = version
		}
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
	}
	// retemplated names the members whose spec carries the new quota, oldest first.
	retemplated := func() []string {
		GinkgoHelper()
		var out []string
		for _, m := range h.members() {
			if m.Spec.Options != nil && m.Spec.Options.QuotaBackendBytes != nil && *m.Spec.Options.QuotaBackendBytes == 4<<30 {
				Expect(m.Spec.Resources.Requests.Memory().String()).To(Equal("256Mi"), "the whole template is rolled at once")
				out = append(out, m.Name)
			}
		}
		return out
	}
	// restart plays the member reconciler restarting a member on its spec:
	// first not Ready, then Ready, running a Pod built from its template.
	restart := func(ec *v1alpha1.EtcdCluster, name string) {
		GinkgoHelper()
		m := h.memberNamed(name)
		h.setReady(m, false)
		h.reconcile(ec)
		h.setMemberStatus(m, func(s *v1alpha1.EtcdMemberStatus) {
			s.Version, s.TemplateHash = m.Spec.Version, pod.TemplateHash(&m.Spec)
			apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
				Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPodReady, Message: "pod is ready"})
		})
	}
	cond := func(ec *v1alpha1.EtcdCluster, t string) metav1.Condition {
		GinkgoHelper()
		c := apimeta.FindStatusCondition(h.get(ec).Status.Conditions, t)
		Expect(c).NotTo(BeNil(), t)
		return *c
	}
	// roles names the leader and the followers, oldest first.
	roles := func() (leader, b, c string) {
		for _, m := range h.members() {
			switch {
			case mustID(&m) == h.etcd.Leader():
				leader = m.Name
			case b == "":
				b = m.Name
			default:
				c = m.Name
			}
		}
		return leader, b, c
	}

	It("rolls a quota raise and a resources change one member at a time, followers first, the leader last after moving leadership, and says so in status", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		report("3.6.16")
		h.reconcile(ec)
		Expect(cond(ec, v1alpha1.ConditionTemplateDrifted).Status).To(Equal(metav1.ConditionFalse))
		Expect(h.get(ec).Status.UpdatedMembers).To(Equal(int32(3)))
		a, b, c := roles()

		retemplate(ec, "")
		h.reconcile(ec) // latches the spec
		h.reconcile(ec)
		Expect(retemplated()).To(Equal([]string{b}), "the oldest follower first")
		h.reconcile(ec)
		Expect(retemplated()).To(Equal([]string{b}), "one at a time: the next waits for this one to run its new Pod")
		p := cond(ec, v1alpha1.ConditionProgressing)
		Expect(p.Reason).To(Equal(v1alpha1.ReasonRolling))
		Expect(p.Message).To(Equal("0/3 members on the current Pod template; waiting for member " + b + " to run the current Pod template"))
		d := cond(ec, v1alpha1.ConditionTemplateDrifted)
		Expect(d.Status).To(Equal(metav1.ConditionTrue))
		Expect(d.Reason).To(Equal(v1alpha1.ReasonTemplateMismatch))
		Expect(d.Message).To(HavePrefix("3 of 3 running member(s) run an older Pod template than the spec's (resources, options)"))
		Expect(h.get(ec).Status.UpdatedMembers).To(BeZero())

		restart(ec, b)
		h.reconcile(ec)
		Expect(retemplated()).To(Equal([]string{b, c}))
		Expect(cond(ec, v1alpha1.ConditionProgressing).Message).To(HavePrefix("1/3 members on the current Pod template; "))
		Expect(cond(ec, v1alpha1.ConditionTemplateDrifted).Message).To(HavePrefix("2 of 3 running member(s)"))

		restart(ec, c)
		h.reconcile(ec)
		Expect(retemplated()).To(Equal([]string{b, c}), "the leader is not rolled while it leads")
		Expect(callsLike(h.etcd.Calls(), "MoveLeader")).To(HaveLen(1))
		Expect(h.etcd.Leader()).To(Equal(mustID(h.memberNamed(b))), "leadership moved to the oldest member on the new template")
		h.reconcile(ec)
		Expect(retemplated()).To(ConsistOf(a, b, c), "the former leader, now a follower, goes last")

		restart(ec, a)
		h.reconcile(ec)
		cur := h.get(ec)
		Expect(conditionReason(cur, v1alpha1.ConditionProgressing)).To(Equal(v1alpha1.ReasonReconciled))
		Expect(conditionStatus(cur, v1alpha1.ConditionTemplateDrifted)).To(Equal(metav1.ConditionFalse))
		Expect(cur.Status.UpdatedMembers).To(Equal(int32(3)))
		for _, m := range h.members() {
			Expect(m.Spec.Version).To(Equal("3.6.16"), "a template roll changes no version")
		}
		Expect(callsLike(h.events.All(), "Normal RollingMember Rolling follower "+b+" onto the new Pod template (resources, options): 0/3 members on the current Pod template")).To(HaveLen(1))
		Expect(callsLike(h.events.All(), "Normal RollingMember")).To(HaveLen(3))
		Expect(callsLike(h.events.All(), "Normal Rolled Every member runs the spec's Pod template")).To(HaveLen(1))
		Expect(callsLike(h.events.All(), "Normal Upgraded")).To(BeEmpty())
		Expect(h.members()).To(HaveLen(3), "no member was added or removed")
	})

	It("rolls a version and a template change together, as one upgrade", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		report("3.6.16")
		_, b, _ := roles()
		retemplate(ec, "3.7.3")
		h.reconcile(ec)
		h.reconcile(ec)
		Expect(retemplated()).To(Equal([]string{b}))
		Expect(h.memberNamed(b).Spec.Version).To(Equal("3.7.3"), "one restart carries both")
		p := cond(ec, v1alpha1.ConditionProgressing)
		Expect(p.Reason).To(Equal(v1alpha1.ReasonUpgrading))
		Expect(p.Message).To(HavePrefix("0/3 members on etcd 3.7.3 and the current Pod template; "))
		Expect(callsLike(h.events.All(), "Normal RollingMember Rolling follower "+b+" from etcd 3.6.16 to 3.7.3 and onto the new Pod template (resources, options)")).To(HaveLen(1))
	})

	It("holds while a member has not reported its Pod's template", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		report("3.6.16")
		ms := h.members()
		h.setMemberStatus(&ms[0], func(s *v1alpha1.EtcdMemberStatus) { s.TemplateHash = "" })
		retemplate(ec, "")
		h.reconcile(ec)
		h.reconcile(ec)
		Expect(retemplated()).To(BeEmpty(), "what member %s runs is not known", ms[0].Name)
		Expect(cond(ec, v1alpha1.ConditionProgressing).Message).To(ContainSubstring("waiting for member " + ms[0].Name + " to report the template of its Pod"))
		h.setMemberStatus(&ms[0], func(s *v1alpha1.EtcdMemberStatus) { s.TemplateHash = pod.TemplateHash(&ms[0].Spec) })

		h.reconcile(ec)
		Expect(retemplated()).To(HaveLen(1), "reported: the roll starts")
	})

	It("rolls the template while a version change is refused, and keeps the running version", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		By("members on 3.5.20 under a spec of 3.6.16: etcd wants 3.5.26 or later first, refused")
		for _, m := range h.members() {
			m.Spec.Version = "3.5.20"
			Expect(k8sClient.Update(ctx, &m)).To(Succeed())
		}
		report("3.5.20")
		retemplate(ec, "")
		h.reconcile(ec)
		h.reconcile(ec)
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionUpgradeBlocked)).To(Equal(metav1.ConditionTrue))
		Expect(retemplated()).To(HaveLen(1), "the template is rolled")
		for _, m := range h.members() {
			Expect(m.Spec.Version).To(Equal("3.5.20"), "the refused version is not")
		}
		Expect(cond(ec, v1alpha1.ConditionProgressing).Reason).To(Equal(v1alpha1.ReasonRolling))
	})
})
