package charts_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pdb"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pvc"
	"github.com/etcdfleet/etcdfleet/memberctl/component/service"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// escalationsRefused proves, as the ServiceAccount that policyPrefix's
// policies guard (namespace saNS), that every write the workload role
// grants is admitted only in the shape memberctl builds: the Pods and Jobs
// shape corpus, Services, claims, budgets and deletes, each refused by the
// policy named for it; and that the builders' own objects are admitted.
func escalationsRefused(ctx context.Context, t *testing.T, w1 *sandbox.Cluster, wc client.Client, saNS, policyPrefix string) {
	ns := "escalation-" + saNS
	createNamespace(ctx, t, wc, ns, nil)
	ec := tlsCluster(ns, "adm")
	mustCreate(ctx, t, wc, ec)
	// A real member: the claim policy checks the claim's controller UID.
	member := &etcdv1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "adm-0"},
		Spec: etcdv1.EtcdMemberSpec{ClusterName: ec.Name, Version: ec.Spec.Version, Storage: ec.Spec.Storage}}
	mustCreate(ctx, t, wc, member)
	defer func() {
		for _, o := range []client.Object{member, ec} {
			if err := client.IgnoreNotFound(wc.Delete(ctx, o)); err != nil {
				t.Errorf("delete %s: %v", o.GetName(), err)
			}
		}
	}()
	foreignObjects(ctx, t, wc, ns)
	// Else the ServiceAccount admission plugin, not the policy, would
	// refuse the Pod that runs as it.
	mustCreate(ctx, t, wc, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "powerful"}})
	sa := saClientset(ctx, t, w1, saNS, saName)
	k := kindsUnderTest{sa: sa, ns: ns, ec: ec, member: member, prefix: policyPrefix}
	claim := k.goodClaim()
	claim.OwnerReferences[0].UID = member.UID
	mustCreate(ctx, t, wc, claim) // as an administrator: the member's claim exists when its Pod is created

	waitEnforced(ctx, t, k)
	admitted(t, k.goods(ctx))
	shapeRefused(t, "a member Pod", policyPrefix+"-pods", func(e shapeEscalation) error {
		p := k.goodPod()
		e(&p.ObjectMeta, &p.Spec)
		return ignore(sa.CoreV1().Pods(ns).Create(ctx, p, dryRun))
	})
	shapeRefused(t, "a snapshot Job", policyPrefix+"-jobs", func(e shapeEscalation) error {
		j := k.goodJob()
		e(&j.Spec.Template.ObjectMeta, &j.Spec.Template.Spec)
		return ignore(sa.BatchV1().Jobs(ns).Create(ctx, j, dryRun))
	})
	// The verify Job (restore drill) adds a scratch emptyDir: the corpus
	// on its shape is refused all the same (a hostPath, a privileged
	// container, another command... in place of the drill's).
	shapeRefused(t, "a verify Job", policyPrefix+"-jobs", func(e shapeEscalation) error {
		j := k.goodVerifyJob()
		e(&j.Spec.Template.ObjectMeta, &j.Spec.Template.Spec)
		return ignore(sa.BatchV1().Jobs(ns).Create(ctx, j, dryRun))
	})
	for what, c := range k.badCreates(ctx) {
		refused(t, what, c.policy, c.create())
	}
	foreignWritesRefused(ctx, t, sa, policyPrefix)
	// What the manager dry-runs to verify its credentials is refused too:
	// the install it verifies is constrained.
	if admitted, err := workload.Constrained(ctx, saClient(ctx, t, w1, saNS, saName), []string{ns}); err != nil || admitted != "" {
		t.Errorf("the manager's constraint probes as %s/%s: admitted %q, error %v", saNS, saName, admitted, err)
	}
}

// kindsUnderTest builds, for one namespace and ServiceAccount, the objects
// memberctl would and the ones it never would.
type kindsUnderTest struct {
	sa     kubernetes.Interface
	ns     string
	ec     *etcdv1.EtcdCluster
	member *etcdv1.EtcdMember
	prefix string
}

func (k kindsUnderTest) goodPod() *corev1.Pod {
	p := memberPod(k.ec, k.member.Name)
	p.OwnerReferences[0].UID = k.member.UID
	return p
}

func (k kindsUnderTest) goodClaim() *corev1.PersistentVolumeClaim {
	c := pvc.Build(k.member)
	c.OwnerReferences = controlledBy("EtcdMember", k.member.Name)
	return c
}

// goodJob is the snapshot Job of an S3 snapshot of the cluster.
func (k kindsUnderTest) goodJob() *batchv1.Job {
	snap := &etcdv1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: "adm-snap"},
		Spec: etcdv1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: k.ec.Name},
			Location: etcdv1.SnapshotLocation{S3: &etcdv1.S3Location{Endpoint: "https://s3.example.com", Bucket: "b", Key: "adm/",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}}}}}
	j := etcdsnapshot.BuildJob(snap, []etcdv1.EtcdMember{*k.member}, etcdsnapshot.DefaultOptions())
	j.OwnerReferences = controlledBy("EtcdSnapshot", snap.Name)
	return j
}

// goodVerifyJob is the verify Job (total-loss check, restore drill) of a
// Complete S3 snapshot of the cluster: the drill's emptyDir included.
func (k kindsUnderTest) goodVerifyJob() *batchv1.Job {
	snap := &etcdv1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: "adm-snap"},
		Spec: etcdv1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: k.ec.Name},
			Location: etcdv1.SnapshotLocation{S3: &etcdv1.S3Location{Endpoint: "https://s3.example.com", Bucket: "b", Key: "adm/",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}}}}}
	snap.Status.Phase = etcdv1.SnapshotComplete
	snap.Status.Artifact = &etcdv1.SnapshotArtifact{SizeBytes: 4096, Revision: 7, ETag: "0123456789abcdef0123456789abcdef",
		SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
	j := etcdsnapshot.BuildVerifyJob(snap, etcdsnapshot.DefaultOptions())
	j.OwnerReferences = controlledBy("EtcdSnapshot", snap.Name)
	return j
}

func (k kindsUnderTest) goodServices() []*corev1.Service {
	var out []*corev1.Service
	for _, s := range []*corev1.Service{service.BuildHeadless(k.ec), service.BuildClient(k.ec)} {
		s.OwnerReferences = controlledBy("EtcdCluster", k.ec.Name)
		out = append(out, s)
	}
	return out
}

func (k kindsUnderTest) goodPDB() *policyv1.PodDisruptionBudget {
	b := pdb.Build(k.ec, 3)
	b.OwnerReferences = controlledBy("EtcdCluster", k.ec.Name)
	return b
}

func (k kindsUnderTest) goods(ctx context.Context) []goodObject {
	ns, sa := k.ns, k.sa
	goods := []goodObject{
		{"a member's Pod, on its claim", func() error { return ignore(sa.CoreV1().Pods(ns).Create(ctx, k.goodPod(), dryRun)) }},
		{"a snapshot Job", func() error { return ignore(sa.BatchV1().Jobs(ns).Create(ctx, k.goodJob(), dryRun)) }},
		{"a verify Job (restore drill)", func() error { return ignore(sa.BatchV1().Jobs(ns).Create(ctx, k.goodVerifyJob(), dryRun)) }},
		{"a data claim", func() error {
			c := k.goodClaim()
			c.Name, c.OwnerReferences[0].Name = "data-adm-1", "adm-1"
			return ignore(sa.CoreV1().PersistentVolumeClaims(ns).Create(ctx, c, dryRun))
		}},
		{"the budget", func() error { return ignore(sa.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, k.goodPDB(), dryRun)) }},
	}
	for _, s := range k.goodServices() {
		goods = append(goods, goodObject{"Service " + s.Name, func() error { return ignore(sa.CoreV1().Services(ns).Create(ctx, s, dryRun)) }})
	}
	return goods
}

// badCreate is one write the RBAC allows and a policy must refuse.
type badCreate struct {
	policy string
	create func() error
}

// badCreates: items 1, 2, 7, 8 and 10 of the escalation report, beside the
// shape corpus.
func (k kindsUnderTest) badCreates(ctx context.Context) map[string]badCreate {
	ns, sa, p := k.ns, k.sa, k.prefix
	pod := func(mutate func(*corev1.Pod)) func() error {
		return func() error {
			o := k.goodPod()
			mutate(o)
			return ignore(sa.CoreV1().Pods(o.Namespace).Create(ctx, o, dryRun))
		}
	}
	claim := func(mutate func(*corev1.PersistentVolumeClaim)) func() error {
		return func() error {
			o := k.goodClaim()
			o.Name, o.OwnerReferences[0].Name = "data-adm-2", "adm-2"
			mutate(o)
			return ignore(sa.CoreV1().PersistentVolumeClaims(ns).Create(ctx, o, dryRun))
		}
	}
	svc := func(mutate func(*corev1.Service)) func() error {
		return func() error {
			o := k.goodServices()[1]
			mutate(o)
			return ignore(sa.CoreV1().Services(o.Namespace).Create(ctx, o, dryRun))
		}
	}
	budget := func(mutate func(*policyv1.PodDisruptionBudget)) func() error {
		return func() error {
			o := k.goodPDB()
			mutate(o)
			return ignore(sa.PolicyV1().PodDisruptionBudgets(o.Namespace).Create(ctx, o, dryRun))
		}
	}
	job := func(mutate func(*batchv1.Job)) func() error {
		return func() error {
			o := k.goodJob()
			mutate(o)
			return ignore(sa.BatchV1().Jobs(o.Namespace).Create(ctx, o, dryRun))
		}
	}
	other := &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}}
	return map[string]badCreate{
		"a privileged Job in kube-system": {p + "-jobs", job(func(j *batchv1.Job) {
			j.Namespace = "kube-system"
			shapeEscalations()["a privileged container"](&j.Spec.Template.ObjectMeta, &j.Spec.Template.Spec)
			shapeEscalations()["a hostPath"](&j.Spec.Template.ObjectMeta, &j.Spec.Template.Spec)
		})},
		"a Job no EtcdSnapshot controls": {p + "-jobs", job(func(j *batchv1.Job) { j.OwnerReferences = nil })},
		"a Pod named after another app's, on its claim": {p + "-pod-claims", pod(func(o *corev1.Pod) {
			o.Name, o.Spec.Hostname = "web-0", "web-0"
			o.OwnerReferences = controlledBy("EtcdMember", "web-0")
			o.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "data-web-0"
		})},
		"a Pod with a forged member UID, on the member's claim": {p + "-pod-claims", pod(func(o *corev1.Pod) {
			o.OwnerReferences = controlledBy("EtcdMember", k.member.Name)
		})},
		// Refused by the Pods policy (name, claim) and the Secrets policy
		// (a claim its cluster does not name): whichever runs first.
		"a Pod not named after its member": {p + "-pod", pod(func(o *corev1.Pod) { o.Name = "adm-9" })},
		"a claim cloned from another app's": {p + "-claims", claim(func(o *corev1.PersistentVolumeClaim) {
			o.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "data-web-0"}
		})},
		"a claim bound to a chosen volume":   {p + "-claims", claim(func(o *corev1.PersistentVolumeClaim) { o.Spec.VolumeName = "pv-of-another-app" })},
		"a claim selecting volumes":          {p + "-claims", claim(func(o *corev1.PersistentVolumeClaim) { o.Spec.Selector = other })},
		"a claim not named after its member": {p + "-claims", claim(func(o *corev1.PersistentVolumeClaim) { o.Name = "data-web-1" })},
		"a NodePort Service":                 {p + "-services", svc(func(o *corev1.Service) { o.Spec.Type = corev1.ServiceTypeNodePort })},
		"a Service with external IPs":        {p + "-services", svc(func(o *corev1.Service) { o.Spec.ExternalIPs = []string{"203.0.113.7"} })},
		"a Service selecting another app":    {p + "-services", svc(func(o *corev1.Service) { o.Spec.Selector = other.MatchLabels })},
		"a Service not of its cluster's names": {p + "-services", svc(func(o *corev1.Service) {
			o.Namespace, o.Name = "kube-system", "kube-dns-2"
		})},
		"a budget of another app's Pods": {p + "-pdbs", budget(func(o *policyv1.PodDisruptionBudget) { o.Spec.Selector = other })},
		"a budget of every Pod": {p + "-pdbs", budget(func(o *policyv1.PodDisruptionBudget) {
			o.Spec.Selector = &metav1.LabelSelector{}
		})},
		"a budget in kube-system": {p + "-pdbs", budget(func(o *policyv1.PodDisruptionBudget) { o.Namespace = "kube-system"; o.OwnerReferences = nil })},
	}
}

// waitEnforced waits until each policy refuses one escalation: policies
// and their params reach the apiserver's admission informers one by one,
// asynchronously (CI once saw one enforce seconds after another).
func waitEnforced(ctx context.Context, t *testing.T, k kindsUnderTest) {
	t.Helper()
	bad := k.badCreates(ctx)
	probes := map[string]func() error{
		"pods":       func() error { return k.shapeProbe(ctx) },
		"jobs":       bad["a Job no EtcdSnapshot controls"].create,
		"pod-claims": bad["a Pod named after another app's, on its claim"].create,
		// The member's own claim reached the param informer too.
		"pod-claims, the member's claim": bad["a Pod with a forged member UID, on the member's claim"].create,
		"claims":                         bad["a claim bound to a chosen volume"].create,
		"services":                       bad["a NodePort Service"].create,
		"pdbs":                           bad["a budget of every Pod"].create,
		"deletes": func() error {
			return k.sa.CoreV1().Pods("kube-system").Delete(ctx, "coredns-0", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		},
	}
	for name, probe := range probes {
		eventually(ctx, t, 30*time.Second, "policy "+k.prefix+"-"+name+" enforced", func() error {
			if err := probe(); err == nil {
				return fmt.Errorf("an escalation is still admitted")
			}
			return nil
		})
	}
}

func (k kindsUnderTest) shapeProbe(ctx context.Context) error {
	p := k.goodPod()
	p.Spec.Containers[0].Image = "docker.io/library/busybox:1"
	return ignore(k.sa.CoreV1().Pods(k.ns).Create(ctx, p, dryRun))
}
