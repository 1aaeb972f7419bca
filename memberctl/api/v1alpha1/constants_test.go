package v1alpha1_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

var _ = Describe("constants", func() {
	It("builds cluster and member labels", func() {
		Expect(v1alpha1.ClusterLabels("c1")).To(Equal(map[string]string{
			"app.kubernetes.io/name":       "etcd",
			"app.kubernetes.io/instance":   "c1",
			"app.kubernetes.io/managed-by": "etcdfleet",
			"etcd.etcdfleet.io/cluster":    "c1",
		}))
		m := v1alpha1.MemberLabels("c1", "c1-abcde")
		Expect(m).To(HaveKeyWithValue("app.kubernetes.io/component", "c1-abcde"))
		Expect(m).To(HaveLen(5))
		// Each call returns a new map.
		m["x"] = "y"
		Expect(v1alpha1.ClusterLabels("c1")).NotTo(HaveKey("x"))
	})

	It("selects managed objects and cluster members", func() {
		sel, err := labels.Parse(v1alpha1.ManagedBySelector)
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Matches(labels.Set(v1alpha1.MemberLabels("c1", "m")))).To(BeTrue())
		Expect(sel.Matches(labels.Set{"app.kubernetes.io/managed-by": "helm"})).To(BeFalse())
		Expect(v1alpha1.ManagedByLabelSelector().String()).To(Equal(v1alpha1.ManagedBySelector))

		cs, err := labels.Parse(v1alpha1.ClusterSelector("c1"))
		Expect(err).NotTo(HaveOccurred())
		Expect(cs.Matches(labels.Set(v1alpha1.MemberLabels("c1", "m")))).To(BeTrue())
		Expect(cs.Matches(labels.Set(v1alpha1.MemberLabels("c2", "m")))).To(BeFalse())
	})

	It("names the finalizer, annotation and role label in the API group", func() {
		Expect(v1alpha1.FinalizerMemberCleanup).To(Equal("etcd.etcdfleet.io/member-cleanup"))
		Expect(v1alpha1.AnnotationReplaceNow).To(Equal("etcd.etcdfleet.io/replace-now"))
		Expect(v1alpha1.LabelRole + "=" + v1alpha1.RoleVoter).To(Equal("etcd.etcdfleet.io/role=voter"))
	})

	It("registers both kinds and their lists", func() {
		s := runtime.NewScheme()
		Expect(v1alpha1.AddToScheme(s)).To(Succeed())
		for _, kind := range []string{"EtcdCluster", "EtcdClusterList", "EtcdMember", "EtcdMemberList"} {
			Expect(s.Recognizes(schema.GroupVersionKind{Group: "etcd.etcdfleet.io", Version: "v1alpha1", Kind: kind})).
				To(BeTrue(), kind)
		}
		Expect(v1alpha1.Resource("etcdclusters").String()).To(Equal("etcdclusters.etcd.etcdfleet.io"))
	})
})
