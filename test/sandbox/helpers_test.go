package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/etcdfleet/etcdfleet/memberctl/etcdaccess"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// etcdCluster describes hand-written member Pods shaped as the operator
// will create them: bare Pods with hostname/subdomain DNS names, PVC or
// memory-backed data, TCP liveness and /health readiness.
type etcdCluster struct {
	ns, name string
	members  []string
	memory   bool
}

func newEtcdCluster(ns, name string, n int, memory bool) etcdCluster {
	ec := etcdCluster{ns: ns, name: name, memory: memory}
	for i := 0; i < n; i++ {
		ec.members = append(ec.members, fmt.Sprintf("%s-%d", name, i))
	}
	return ec
}

func (ec etcdCluster) peerURL(m string) string {
	return fmt.Sprintf("http://%s.%s.%s.svc:2380", m, ec.name, ec.ns)
}

func (ec etcdCluster) initialCluster() string {
	parts := make([]string, 0, len(ec.members))
	for _, m := range ec.members {
		parts = append(parts, m+"="+ec.peerURL(m))
	}
	return strings.Join(parts, ",")
}

func (ec etcdCluster) pod(m, state string) *corev1.Pod {
	data := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + m}}
	if ec.memory {
		data = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: ec.ns, Labels: map[string]string{
			"app.kubernetes.io/name": "etcd", "app.kubernetes.io/instance": ec.name,
		}},
		Spec: corev1.PodSpec{
			Hostname: m, Subdomain: ec.name, RestartPolicy: corev1.RestartPolicyAlways,
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: data}},
			Containers: []corev1.Container{{
				Name: "etcd", Image: "quay.io/coreos/etcd:v3.7.3",
				Command: []string{"etcd",
					"--name=" + m, "--data-dir=/var/lib/etcd",
					"--listen-peer-urls=http://0.0.0.0:2380", "--listen-client-urls=http://0.0.0.0:2379",
					"--listen-metrics-urls=http://0.0.0.0:2381",
					"--advertise-client-urls=" + strings.Replace(ec.peerURL(m), ":2380", ":2379", 1),
					"--initial-advertise-peer-urls=" + ec.peerURL(m),
					"--initial-cluster=" + ec.initialCluster(), "--initial-cluster-state=" + state,
					"--initial-cluster-token=" + ec.ns + "-" + ec.name,
				},
				Ports:        []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}, {Name: "peer", ContainerPort: 2380}, {Name: "metrics", ContainerPort: 2381}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(2380)}},
					InitialDelaySeconds: 15, PeriodSeconds: 10, FailureThreshold: 3},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(2381)}},
					PeriodSeconds: 5, FailureThreshold: 3},
			}},
		},
	}
}

func (ec etcdCluster) claim(m string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-" + m, Namespace: ec.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// create creates the namespace, claims and Pods.
func (ec etcdCluster) create(ctx context.Context, c *sandbox.Cluster, state string) {
	cs := c.Clientset.CoreV1()
	_, _ = cs.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ec.ns}}, metav1.CreateOptions{})
	for _, m := range ec.members {
		if !ec.memory {
			_, err := cs.PersistentVolumeClaims(ec.ns).Create(ctx, ec.claim(m), metav1.CreateOptions{})
			if err != nil && !strings.Contains(err.Error(), "already exists") {
				Expect(err).NotTo(HaveOccurred())
			}
		}
		_, err := cs.Pods(ec.ns).Create(ctx, ec.pod(m, state), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
}

// waitReady waits until every member Pod is Running and Ready.
func (ec etcdCluster) waitReady(ctx context.Context, c *sandbox.Cluster) {
	Eventually(func(g Gomega) {
		for _, m := range ec.members {
			p, err := c.Clientset.CoreV1().Pods(ec.ns).Get(ctx, m, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), m)
			g.Expect(e2eutil.PodReady(p)).To(BeTrue(), m)
		}
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// directClient dials the members by Pod IP.
func (ec etcdCluster) directClient(ctx context.Context, c *sandbox.Cluster) *clientv3.Client {
	var eps []string
	for _, m := range ec.members {
		p, err := c.Clientset.CoreV1().Pods(ec.ns).Get(ctx, m, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		eps = append(eps, p.Status.PodIP+":2379")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	return cli
}

// forwardedClient dials the members through pods/portforward on the
// cluster's kube-apiserver, as a manager outside the cluster does.
func (ec etcdCluster) forwardedClient(c *sandbox.Cluster) (*clientv3.Client, func()) {
	d, err := etcdaccess.NewPortForwardDialer(c.Config, etcdaccess.PortForwardOptions{})
	Expect(err).NotTo(HaveOccurred())
	var eps []string
	for _, m := range ec.members {
		eps = append(eps, fmt.Sprintf("%s.%s.%s.svc:2379", m, ec.name, ec.ns))
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(etcdaccess.ContextDialer(d))}})
	Expect(err).NotTo(HaveOccurred())
	return cli, func() { cli.Close(); d.Close() }
}

// memberIDs returns member name -> ID from etcd.
func memberIDs(ctx context.Context, cli *clientv3.Client) map[string]uint64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	Expect(err).NotTo(HaveOccurred())
	ids := map[string]uint64{}
	for _, m := range resp.Members {
		ids[m.Name] = m.ID
	}
	return ids
}

func putKeys(ctx context.Context, cli *clientv3.Client, prefix string, n int) {
	for i := 0; i < n; i++ {
		Eventually(func() error {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			_, err := cli.Put(cctx, fmt.Sprintf("%s/%04d", prefix, i), fmt.Sprintf("v%d", i))
			return err
		}).WithTimeout(20 * time.Second).Should(Succeed())
	}
}

func countKeys(ctx context.Context, cli *clientv3.Client, prefix string) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := cli.Get(cctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}
