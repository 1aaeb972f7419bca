package etcdsnapshot

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// TestJobMountsOnlyTheCABundleKeyAndAsksForEncryption: the snapshot Job
// mounts the one key of the CA Secret read-only, passes its path and the
// encryption to the agent.
func TestJobMountsOnlyTheCABundleKeyAndAsksForEncryption(t *testing.T) {
	s := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s1"},
		Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "c"},
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "https://s3:9000/", Bucket: "b", Key: "p/",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"},
				CABundleSecretRef:    &v1alpha1.SecretKeyRef{Name: "storage-ca"}, // key defaulted by the CRD; empty here
				ServerSideEncryption: &v1alpha1.ServerSideEncryption{Type: v1alpha1.SSEKMS, KMSKeyID: "alias/k"}}}}}
	m := v1alpha1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-0"}, Spec: v1alpha1.EtcdMemberSpec{ClusterName: "c"}}
	pod := BuildJob(s, []v1alpha1.EtcdMember{m}, DefaultOptions()).Spec.Template.Spec
	args := strings.Join(pod.Containers[0].Args, " ") + " "
	for _, want := range []string{"--s3-ca-file=" + s3CADir + "/ca.crt ", "--s3-sse=SSE-KMS ", "--s3-sse-kms-key-id=alias/k "} {
		if !strings.Contains(args, want) {
			t.Errorf("agent args %q lack %q", args, want)
		}
	}
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "storage-ca" })
	if i < 0 {
		t.Fatalf("no CA Secret volume: %+v", pod.Volumes)
	}
	if items := pod.Volumes[i].Secret.Items; len(items) != 1 || items[0].Key != "ca.crt" {
		t.Errorf("CA volume items %+v: want the one key ca.crt", items)
	}
	if !slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(vm corev1.VolumeMount) bool {
		return vm.Name == pod.Volumes[i].Name && vm.MountPath == s3CADir && vm.ReadOnly
	}) {
		t.Errorf("CA volume not mounted read-only at %s: %+v", s3CADir, pod.Containers[0].VolumeMounts)
	}
}

// TestJobOfATLSClusterDialsOverMTLS: the snapshot Job of a cluster that
// serves clients over TLS with client certificates dials the members'
// https URLs, trusts the serving Secret's ca.crt, and presents the
// operator's client pair, each Secret mounted read-only with only the keys
// the agent reads (never the members' serving key); its etcd limits are
// the manager's.
func TestJobOfATLSClusterDialsOverMTLS(t *testing.T) {
	s := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s1"},
		Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "c"},
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "http://s3:8333", Bucket: "b",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}}}}
	var members []v1alpha1.EtcdMember
	for _, n := range []string{"c-0", "c-1"} {
		members = append(members, v1alpha1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n},
			Spec: v1alpha1.EtcdMemberSpec{ClusterName: "c", TLS: &v1alpha1.MemberTLS{ClientServerSecretRef: "c-server-tls",
				ClientMTLS: true, OperatorClientSecretRef: "c-operator-tls", PeerSecretRef: "c-peer-tls"}}})
	}
	o := DefaultOptions()
	o.S3Limits.EtcdLimits.DialTimeout = 7 * time.Second
	pod := BuildJob(s, members, o).Spec.Template.Spec
	args := strings.Join(pod.Containers[0].Args, " ") + " "
	for _, want := range []string{"--endpoints=https://c-0.", ",https://c-1.", "--ca-file=" + tlsServerDir + "/ca.crt ",
		"--cert-file=" + tlsClientDir + "/tls.crt ", "--key-file=" + tlsClientDir + "/tls.key ", "--etcd-dial-timeout=7s "} {
		if !strings.Contains(args, want) {
			t.Errorf("agent args %q lack %q", args, want)
		}
	}
	for _, want := range []struct {
		secret, dir string
		keys        []string
	}{{"c-server-tls", tlsServerDir, []string{"ca.crt"}}, {"c-operator-tls", tlsClientDir, []string{"tls.crt", "tls.key"}}} {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == want.secret })
		if i < 0 {
			t.Errorf("no volume of Secret %s: %+v", want.secret, pod.Volumes)
			continue
		}
		var keys []string
		for _, it := range pod.Volumes[i].Secret.Items {
			keys = append(keys, it.Key)
		}
		if !slices.Equal(keys, want.keys) {
			t.Errorf("Secret %s mounts keys %v, want only %v", want.secret, keys, want.keys)
		}
		if !slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(vm corev1.VolumeMount) bool {
			return vm.Name == pod.Volumes[i].Name && vm.MountPath == want.dir && vm.ReadOnly
		}) {
			t.Errorf("Secret %s not mounted read-only at %s: %+v", want.secret, want.dir, pod.Containers[0].VolumeMounts)
		}
	}
	if slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "c-peer-tls" }) {
		t.Error("the agent mounts the peer Secret; it only talks to etcd as a client")
	}
}

// TestAgentJobsFailAtOnceOnAPermanentError: the snapshot and verify Jobs
// (and the cleanup Job, built by the same agentJob) fail at their first
// Pod that exits agent.ExitPermanent, and retry any other failure up to
// their backoffLimit; each Job gets a policy of its own, since a client
// decodes the server's answer into the Job it sent.
func TestAgentJobsFailAtOnceOnAPermanentError(t *testing.T) {
	s := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s1"},
		Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "c"},
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "https://s3:9000/", Bucket: "b",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}}},
		Status: v1alpha1.EtcdSnapshotStatus{Artifact: &v1alpha1.SnapshotArtifact{SHA256: strings.Repeat("a", 64), SizeBytes: 1}}}
	m := v1alpha1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-0"}, Spec: v1alpha1.EtcdMemberSpec{ClusterName: "c"}}
	snap, verify := BuildJob(s, []v1alpha1.EtcdMember{m}, DefaultOptions()), BuildVerifyJob(s, DefaultOptions())
	for _, job := range []*batchv1.Job{snap, verify} {
		p := job.Spec.PodFailurePolicy
		if p == nil || len(p.Rules) != 1 {
			t.Fatalf("%s: pod failure policy %+v, want one rule", job.Name, p)
		}
		r := p.Rules[0]
		if r.Action != batchv1.PodFailurePolicyActionFailJob || r.OnExitCodes == nil || r.OnExitCodes.ContainerName == nil ||
			*r.OnExitCodes.ContainerName != containerID || r.OnExitCodes.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn ||
			!slices.Equal(r.OnExitCodes.Values, []int32{agent.ExitPermanent}) {
			t.Errorf("%s: rule %+v, want FailJob on %s exiting %d", job.Name, r, containerID, agent.ExitPermanent)
		}
		if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit < 1 {
			t.Errorf("%s: restartPolicy %s, backoffLimit %v: other failures must still be retried by new Pods",
				job.Name, job.Spec.Template.Spec.RestartPolicy, job.Spec.BackoffLimit)
		}
	}
	if snap.Spec.PodFailurePolicy == verify.Spec.PodFailurePolicy {
		t.Error("two Jobs share one pod failure policy")
	}
}
