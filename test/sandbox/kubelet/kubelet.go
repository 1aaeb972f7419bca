package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/etcdfleet/etcdfleet/test/sandbox/sandboxdns"
)

// Options configure a Kubelet. Defaults live in setDefaults.
type Options struct {
	// Cluster names the sandbox cluster; Node names are <Cluster>-node-<i>.
	Cluster string
	Client  kubernetes.Interface
	// Nodes is how many Nodes to register (default 3).
	Nodes int
	// EtcdBinary runs containers whose image is an etcd image, unless
	// EtcdBinaries has one for the image tag's minor version.
	EtcdBinary string
	// EtcdBinaries maps an etcd minor version ("3.6") to the binary that
	// runs images tagged with it (v3.6.16, 3.6.15-0, ...), so a version
	// upgrade or downgrade changes the etcd that runs. A tag of another
	// minor, or none, runs EtcdBinary.
	EtcdBinaries map[string]string
	// AgentBinary (etcdfleet-agent) runs containers whose image is
	// etcdfleet's own; without it they are reported running with no process.
	AgentBinary string
	// Dir holds Pod and volume directories.
	Dir   string
	Hosts *sandboxdns.Hosts
	IPs   *IPAllocator
	// DaemonPort is the kubelet API port set on every Node, where the
	// apiserver sends port-forward requests.
	DaemonPort int32
	// RestartBackoff is the first delay before restarting a crashed
	// container; it doubles up to MaxRestartBackoff (the real kubelet uses
	// 10 s and 5 min; tests want short ones).
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	// MaxProbePeriod caps readiness probes' periods and initial delays;
	// liveness probes keep the Pod's own (see livenessCap).
	MaxProbePeriod time.Duration
	// LeaseRenewInterval is how often each live Node's Lease is renewed
	// (the real kubelet: 10 s). The sandbox's kube-controller-manager
	// marks a Node unreachable after many of them go missing; see
	// sandbox.NodeMonitorGracePeriod. Default 2 s.
	LeaseRenewInterval time.Duration
	// MaxTolerationSeconds caps the tolerationSeconds of every Pod's
	// NoExecute tolerations when the kubelet schedules it, as
	// MaxProbePeriod caps probes: the taint eviction controller then
	// evicts in test time what a cluster would evict in minutes (Pods
	// keep their own when shorter). Default 10 s; see capTolerations.
	MaxTolerationSeconds int64
	// ClusterDomain is the DNS suffix (default cluster.local).
	ClusterDomain string
	Logf          func(format string, args ...any)
}

func (o *Options) setDefaults() {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.RestartBackoff == 0 {
		o.RestartBackoff = 100 * time.Millisecond
	}
	if o.MaxRestartBackoff == 0 {
		o.MaxRestartBackoff = 2 * time.Second
	}
	if o.MaxProbePeriod == 0 {
		o.MaxProbePeriod = 500 * time.Millisecond
	}
	if o.LeaseRenewInterval == 0 {
		o.LeaseRenewInterval = 2 * time.Second
	}
	if o.MaxTolerationSeconds == 0 {
		o.MaxTolerationSeconds = 10
	}
	if o.ClusterDomain == "" {
		o.ClusterDomain = "cluster.local"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.IPs == nil {
		o.IPs = NewIPAllocator()
	}
}

// Kubelet simulates the kubelets of every Node of one cluster.
type Kubelet struct {
	opts       Options
	pods       listerscorev1.PodLister
	nodeLister listerscorev1.NodeLister
	services   listerscorev1.ServiceLister
	svcMu      sync.Mutex
	svcKeys    map[string][]string // hosts keys of Service names, see refreshServices
	queue      workqueue.TypedRateLimitingInterface[string]
	schedMu    sync.Mutex
	assumed    map[types.UID]string // Pods bound, by node, until the informer shows it; see schedule
	factory    informers.SharedInformerFactory

	mu        sync.Mutex
	nodes     map[string]*nodeState
	nodeNames []string              // in the order registered
	workers   map[string]*podWorker // by ns/name
	finished  map[types.UID]bool    // Pods that reached a terminal phase here
	stopped   bool
	quit      chan struct{} // closed by Stop

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type nodeState struct {
	name          string
	up            bool
	failAdmission bool
	// poweredOff: the node's kubelet is dead; it neither runs nor writes.
	poweredOff bool
	// outages counts the node's power losses, so that an outage's timed
	// boot does nothing once PowerOn booted the node (or a later outage
	// owns it).
	outages int
	// lease is the Node's Lease as last written (nil: read it first).
	lease *coordinationv1.Lease
}

// New returns a Kubelet; call Start to run it.
func New(opts Options) *Kubelet {
	opts.setDefaults()
	k := &Kubelet{opts: opts, nodes: map[string]*nodeState{}, workers: map[string]*podWorker{},
		finished: map[types.UID]bool{}, quit: make(chan struct{}), svcKeys: map[string][]string{}, assumed: map[types.UID]string{}}
	for i := 0; i < opts.Nodes; i++ {
		k.addNodeState()
	}
	return k
}

// addNodeState adds the next Node, <Cluster>-node-<i>, and returns its
// name. Called with k.mu held, or before Start.
func (k *Kubelet) addNodeState() string {
	name := fmt.Sprintf("%s-node-%d", k.opts.Cluster, len(k.nodeNames))
	k.nodes[name] = &nodeState{name: name, up: true}
	k.nodeNames = append(k.nodeNames, name)
	return name
}

// NodeNames lists the Nodes this kubelet serves.
func (k *Kubelet) NodeNames() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.nodeNames...)
}

// Start registers the Nodes and runs the Pod loop until Stop.
func (k *Kubelet) Start(ctx context.Context) error {
	if err := os.MkdirAll(k.opts.Dir, 0o755); err != nil {
		return err
	}
	for _, n := range k.NodeNames() {
		if err := k.registerNode(ctx, n); err != nil {
			return fmt.Errorf("register node %s: %w", n, err)
		}
	}
	ctx, k.cancel = context.WithCancel(context.Background())
	k.factory = informers.NewSharedInformerFactory(k.opts.Client, 0)
	k.nodeLister = k.factory.Core().V1().Nodes().Lister()
	podInf := k.factory.Core().V1().Pods()
	k.pods = podInf.Lister()
	k.queue = workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](20*time.Millisecond, time.Second))
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	if _, err := k.factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: k.onClaimDeleted,
	}); err != nil {
		return err
	}
	svcInf := k.factory.Core().V1().Services()
	k.services = svcInf.Lister()
	refresh := func(any) { k.refreshServices() }
	if _, err := svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: refresh, UpdateFunc: func(_, o any) { refresh(o) }, DeleteFunc: refresh,
	}); err != nil {
		return err
	}
	k.factory.Start(ctx.Done())
	for typ, ok := range k.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("kubelet %s: %v cache did not sync", k.opts.Cluster, typ)
		}
	}
	for i := 0; i < 4; i++ {
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			for k.processNext(ctx) {
			}
		}()
	}
	k.wg.Add(1)
	go func() { defer k.wg.Done(); k.heartbeat(ctx) }()
	return nil
}

// Stop kills every container and stops the loops. Pod objects are left as
// they are (a stopped sandbox is being torn down anyway).
func (k *Kubelet) Stop() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.stopped = true
	close(k.quit)
	workers := make([]*podWorker, 0, len(k.workers))
	for _, w := range k.workers {
		workers = append(workers, w)
	}
	k.mu.Unlock()
	if k.queue != nil {
		k.queue.ShutDown()
	}
	if k.cancel != nil {
		k.cancel()
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.stopNow(stopVanished, 0) }()
	}
	wg.Wait()
	k.wg.Wait()
	if k.factory != nil {
		k.factory.Shutdown()
	}
}

func (k *Kubelet) processNext(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	if err := k.syncPod(ctx, key); err != nil {
		if ctx.Err() == nil {
			k.opts.Logf("kubelet %s: sync %s: %v", k.opts.Cluster, key, err)
		}
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

// syncPod drives one Pod toward what the kubelet would do with it.
func (k *Kubelet) syncPod(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pod, err := k.pods.Pods(ns).Get(name)
	k.mu.Lock()
	w := k.workers[key]
	k.mu.Unlock()
	if apierrors.IsNotFound(err) {
		if w != nil {
			w.stopNow(stopVanished, 0) // force-deleted: no grace, as the real kubelet
		}
		return nil
	}
	if err != nil {
		return err
	}
	if w != nil && w.uid != pod.UID {
		w.stopNow(stopVanished, 0) // same name, new Pod: the old one is gone
		w = nil
	}
	if pod.Spec.NodeName == "" {
		if pod.DeletionTimestamp != nil {
			return nil
		}
		return k.schedule(ctx, pod)
	}
	node := k.node(pod.Spec.NodeName)
	if node == nil || k.poweredOff(node.name) {
		return nil // bound to a Node we do not serve, or whose kubelet is dead
	}
	if pod.DeletionTimestamp != nil {
		grace := time.Duration(30) * time.Second
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		if w != nil {
			w.stopNow(stopDeleted, grace)
		}
		return k.finalizeDelete(ctx, pod)
	}
	if w != nil {
		w.noteAPIStatus(pod.Status)
	}
	if isTerminal(pod) || k.wasFinished(pod.UID) || w != nil || !k.nodeUp(node.name) {
		return nil // terminal Pods are never restarted; down nodes run nothing
	}
	return k.startWorker(key, pod)
}

func (k *Kubelet) startWorker(key string, pod *corev1.Pod) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	// Checked again under k.mu: a power loss may have begun since syncPod looked.
	if n := k.nodes[pod.Spec.NodeName]; k.stopped || n == nil || !n.up {
		return nil
	}
	w := newPodWorker(k, pod)
	k.workers[key] = w
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		w.run()
		k.mu.Lock()
		if k.workers[key] == w {
			delete(k.workers, key)
		}
		k.mu.Unlock()
	}()
	return nil
}

// finalizeDelete removes the Pod object once its containers are gone, as the
// kubelet does with a zero-grace delete guarded by the UID.
func (k *Kubelet) finalizeDelete(ctx context.Context, pod *corev1.Pod) error {
	zero := int64(0)
	err := k.opts.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func (k *Kubelet) stopCh() <-chan struct{} { return k.quit }

func (k *Kubelet) node(name string) *nodeState {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.nodes[name]
}

func (k *Kubelet) nodeUp(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := k.nodes[name]
	return n != nil && n.up
}

func (k *Kubelet) poweredOff(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := k.nodes[name]
	return n != nil && n.poweredOff
}

// enqueueAll resyncs every Pod, for example after a Node comes back.
func (k *Kubelet) enqueueAll() {
	pods, err := k.pods.List(labelsEverything())
	if err != nil {
		return
	}
	for _, p := range pods {
		k.queue.Add(p.Namespace + "/" + p.Name)
	}
}

// PodAddress resolves ns/pod:port to the host:port of its running container,
// for the port-forward server.
func (k *Kubelet) PodAddress(namespace, pod string, port int32) (string, error) {
	k.mu.Lock()
	w := k.workers[namespace+"/"+pod]
	k.mu.Unlock()
	if w == nil {
		return "", fmt.Errorf("pod %s/%s is not running on this kubelet", namespace, pod)
	}
	ip := w.podIP()
	if ip == "" {
		return "", fmt.Errorf("pod %s/%s has no IP yet", namespace, pod)
	}
	return fmt.Sprintf("%s:%d", ip, port), nil
}

// WorkerUIDs lists the UIDs of Pods with running workers, for tests.
func (k *Kubelet) WorkerUIDs() []types.UID {
	k.mu.Lock()
	defer k.mu.Unlock()
	uids := make([]types.UID, 0, len(k.workers))
	for _, w := range k.workers {
		uids = append(uids, w.uid)
	}
	return uids
}

func (k *Kubelet) podDir(pod *corev1.Pod) string {
	return filepath.Join(k.opts.Dir, "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// retryOnError retries fn briefly: status writes race the operator's deletes.
func retryOnError(ctx context.Context, fn func(context.Context) error) error {
	return wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 20 * time.Millisecond, Factor: 2, Steps: 6},
		func(ctx context.Context) (bool, error) {
			err := fn(ctx)
			if err == nil || apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, nil
		})
}
