package operator

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

func req(cluster, name string) mcreconcile.Request {
	return mcreconcile.Request{ClusterName: multicluster.ClusterName(cluster),
		Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}}
}

// A hung cluster's reconciles block until released; they must never take
// more than the cap, and another cluster's must run meanwhile.
func TestClusterSlotsKeepAHungClusterToItsCap(t *testing.T) {
	const workers, perCluster = 3, 1
	caps := newWorkerCaps(perCluster)
	hang := make(chan struct{})
	// started tells when the hung cluster's one reconcile is in flight: the
	// bounced requests can come back, and another cluster's reconcile run,
	// before its goroutine gets that far (CI-V, at nice 10).
	started := make(chan struct{}, workers)
	var mu sync.Mutex
	inFlight, most := map[multicluster.ClusterName]int{}, 0
	r := caps.wrap(func(ctx context.Context, rq mcreconcile.Request) (ctrl.Result, error) {
		mu.Lock()
		inFlight[rq.ClusterName]++
		most = max(most, inFlight["hung"])
		mu.Unlock()
		if rq.ClusterName == "hung" {
			started <- struct{}{}
			<-hang
		}
		mu.Lock()
		inFlight[rq.ClusterName]--
		mu.Unlock()
		return ctrl.Result{}, nil
	})

	// Workers take the hung cluster's requests first: all but one bounce.
	results := make(chan ctrl.Result, workers)
	for i := range workers {
		go func() {
			res, _ := r(context.Background(), req("hung", string(rune('a'+i))))
			results <- res
		}()
	}
	for range workers - perCluster {
		select {
		case res := <-results:
			if res.RequeueAfter != capRetry {
				t.Fatalf("a request beyond the cap got %+v, want a requeue after %s", res, capRetry)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("every worker is held by the hung cluster")
		}
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the hung cluster's request within the cap never ran")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := r(context.Background(), req("good", "x")); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("another cluster's reconcile did not run while the hung cluster held its worker")
	}
	mu.Lock()
	held := most
	mu.Unlock()
	if held != perCluster {
		t.Fatalf("the hung cluster had %d reconciles in flight, cap %d", held, perCluster)
	}

	// Its release wakes the oldest bounced request of the same cluster.
	close(hang)
	<-results
	select {
	case e := <-caps.wake:
		if e.Object.ClusterName != "hung" {
			t.Fatalf("woke %v, want a request of the hung cluster", e.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no waiting request was woken when the worker was released")
	}
}

func TestClusterSlotsWakeInOrderOncePerRequest(t *testing.T) {
	s := newWorkerCaps(1)
	if !s.acquire(req("c", "holder")) {
		t.Fatal("the first request must get the free worker")
	}
	for _, n := range []string{"a", "b", "a"} {
		if s.acquire(req("c", n)) {
			t.Fatalf("%s got a worker beyond the cap", n)
		}
	}
	if !s.acquire(req("other", "z")) {
		t.Fatal("a cluster's busy workers must not hold back another cluster")
	}
	var woken []string
	for range 3 {
		s.release("c")
		select {
		case e := <-s.wake:
			woken = append(woken, e.Object.Name)
			if !s.acquire(e.Object) {
				t.Fatalf("woken %s found no free worker", e.Object.Name)
			}
		default:
		}
	}
	if len(woken) != 2 || woken[0] != "a" || woken[1] != "b" {
		t.Fatalf("woken %v, want [a b]: oldest first, each once", woken)
	}
}

// A server that accepts connections and never answers must not hold an API
// call of the reconcilers' client for longer than its timeout (without
// one, the call below would wait for ever).
func TestNewClientWithTimeoutEndsCallsToAHungServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	cl, err := NewClientWithTimeout(200*time.Millisecond)(&rest.Config{Host: "http://" + ln.Addr().String()},
		client.Options{Scheme: Scheme(), Mapper: RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- cl.Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "Timeout") {
			t.Fatalf("got %v, want the call's timeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the write to a hung server is still waiting")
	}
}

func TestControllerOptionsCarryTheReconcileTimeout(t *testing.T) {
	o := Options{Workers: 8, WorkersPerCluster: 4, ReconcileTimeout: time.Minute}
	if got := o.controllerOptions(); got.ReconciliationTimeout != time.Minute || got.MaxConcurrentReconciles != 8 {
		t.Fatalf("controller options: timeout %s, workers %d; want 1m and 8", got.ReconciliationTimeout, got.MaxConcurrentReconciles)
	}
}

// TestEveryControllerUsesTheClassicQueue guards the workaround for
// controller-runtime#3538: multicluster controllers do not inherit the
// manager's UsePriorityQueue, and a nil value means the priority queue.
func TestEveryControllerUsesTheClassicQueue(t *testing.T) {
	if got := (Options{}).controllerOptions().UsePriorityQueue; got == nil || *got {
		t.Fatalf("multicluster controller UsePriorityQueue = %v, want false", got)
	}
	if got := ControllerConfig(config.Controller{}).UsePriorityQueue; got == nil || *got {
		t.Fatalf("manager UsePriorityQueue = %v, want false", got)
	}
}
