package kubelet

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// InstanceLabel is the label whose Pods are spread across Nodes.
const InstanceLabel = "app.kubernetes.io/instance"

func labelsEverything() labels.Selector { return labels.Everything() }

// registerNode creates the Node and reports it Ready with capacity, an
// InternalIP and the kubelet port the apiserver dials for port-forward.
//
// Each Node is its own zone. The node lifecycle controller evicts nothing
// while every zone is wholly down (it blames itself, not the nodes), and
// in a zone of more than two NotReady Nodes and over 55 % of them, in a
// cluster under 50 Nodes, nothing either; with a zone per Node, a power
// loss of some Nodes is a zone outage it acts on, as long as one Node
// runs, and a power loss of every Node evicts nothing, as in a cluster.
func (k *Kubelet) registerNode(ctx context.Context, name string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelHostname: name, corev1.LabelTopologyZone: name, "sandbox.etcdfleet.io/cluster": k.opts.Cluster,
	}}}
	_, err := k.opts.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return k.writeNodeStatus(ctx, name, true)
}

func (k *Kubelet) writeNodeStatus(ctx context.Context, name string, ready bool) error {
	c := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if !ready {
		c.Status, c.Reason, c.Message = corev1.ConditionFalse, "KubeletNotReady", "node is shutting down"
	}
	return k.writeNodeCondition(ctx, name, c)
}

// writeNodeCondition writes the Node's status with ready as its Ready condition.
func (k *Kubelet) writeNodeCondition(ctx context.Context, name string, ready corev1.NodeCondition) error {
	return retryOnError(ctx, func(ctx context.Context) error {
		node, err := k.opts.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		now := metav1.Now()
		ready.LastHeartbeatTime, ready.LastTransitionTime = now, now
		node.Status = corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Phase:       corev1.NodeRunning,
			Conditions:  []corev1.NodeCondition{ready},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: k.opts.DaemonPort}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.36.3-sandbox", OperatingSystem: "linux", Architecture: "amd64"},
		}
		_, err = k.opts.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// AddNode registers one more Node, Ready, and returns its name: a node
// joining a running cluster.
func (k *Kubelet) AddNode(ctx context.Context) (string, error) {
	k.mu.Lock()
	name := k.addNodeState()
	k.mu.Unlock()
	if err := k.registerNode(ctx, name); err != nil {
		return "", fmt.Errorf("register node %s: %w", name, err)
	}
	k.enqueueAll() // Pods left Pending for want of a Ready Node
	return name, nil
}

// SetNodeReady marks a Node up or down. A Node coming up resyncs every Pod
// so Pods left Pending on it start.
func (k *Kubelet) SetNodeReady(ctx context.Context, name string, ready bool) error {
	k.mu.Lock()
	n := k.nodes[name]
	if n == nil {
		k.mu.Unlock()
		return fmt.Errorf("unknown node %q", name)
	}
	n.up = ready
	k.mu.Unlock()
	if err := k.writeNodeStatus(ctx, name, ready); err != nil {
		return err
	}
	if ready {
		k.enqueueAll()
	}
	return nil
}

// schedule binds an unscheduled Pod to the Ready Node with the fewest Pods
// of the same instance, then the fewest Pods overall. With no Ready Node
// the Pod stays Pending, as with the real scheduler's not-ready taint.
//
// One Pod is scheduled at a time, and the Pods it bound count where they
// were bound until the informer shows it (k.assumed, as the real
// scheduler's assumed Pods): two members created together otherwise both
// saw an empty Node and went there.
func (k *Kubelet) schedule(ctx context.Context, pod *corev1.Pod) error {
	k.schedMu.Lock()
	defer k.schedMu.Unlock()
	if k.assumed[pod.UID] != "" {
		return nil // bound already; the informer lags
	}
	all, err := k.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	seen := map[types.UID]bool{}
	for _, p := range all {
		seen[p.UID] = true
		if p.Spec.NodeName != "" {
			delete(k.assumed, p.UID)
		}
	}
	for uid := range k.assumed {
		if !seen[uid] {
			delete(k.assumed, uid) // deleted before the informer showed it bound
		}
	}
	instance := pod.Labels[InstanceLabel]
	type score struct {
		name          string
		same, overall int
	}
	var candidates []score
	for _, n := range k.NodeNames() {
		if k.nodeUp(n) && hostnameAllowed(pod, n) {
			candidates = append(candidates, score{name: n})
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	for _, p := range all {
		node := p.Spec.NodeName
		if node == "" {
			node = k.assumed[p.UID]
		}
		if node == "" || isTerminal(p) || p.UID == pod.UID {
			continue
		}
		for i := range candidates {
			if candidates[i].name != node {
				continue
			}
			candidates[i].overall++
			if instance != "" && p.Namespace == pod.Namespace && p.Labels[InstanceLabel] == instance {
				candidates[i].same++
			}
		}
	}
	if err := k.capTolerations(ctx, pod); err != nil {
		return err
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.same != b.same {
			return a.same < b.same
		}
		return a.overall < b.overall
	})
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: candidates[0].name},
	}
	err = k.opts.Client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err == nil {
		k.assumed[pod.UID] = candidates[0].name
	}
	return err
}

// hostnameAllowed reports whether pod may run on Node name by the one
// placement rule the sandbox honours: a required node affinity on
// kubernetes.io/hostname (operator In; any term may match), which tests
// use to put a Pod on a Node of their choice. Every other rule is
// ignored, as before.
func hostnameAllowed(pod *corev1.Pod, name string) bool {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	restricted := false
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Key != corev1.LabelHostname || e.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			restricted = true
			if slices.Contains(e.Values, name) {
				return true
			}
		}
	}
	return !restricted
}
