package e2eutil

import "testing"

func TestStuckGoroutinesNamesWhereTheManagersGoroutinesWait(t *testing.T) {
	dump := `goroutine 1 [chan receive]:
sync.(*WaitGroup).Wait(0x1)
	/usr/local/go/src/sync/waitgroup.go:118 +0x60
github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret.runner.Start({0x1})
	/work/providers/kubeconfigsecret/provider.go:165 +0x1

goroutine 2 [select]:
github.com/etcdfleet/etcdfleet/test/sandbox/kubelet.(*Kubelet).run(0x1)
	/work/test/sandbox/kubelet/kubelet.go:1 +0x1

goroutine 3 [chan receive]:
sync.(*WaitGroup).Wait(0x1)
	/usr/local/go/src/sync/waitgroup.go:118 +0x60
github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret.runner.Start({0x1})
	/work/providers/kubeconfigsecret/provider.go:165 +0x1

goroutine 5 [sync.Mutex.Lock]:
sync.(*Mutex).Lock(...)
	/usr/local/go/src/sync/mutex.go:46
sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue.(*priorityqueue[...]).Done(0x2f42e80)
	/root/priorityqueue.go:468 +0x8f

goroutine 6 [syscall]:
os/exec.(*Cmd).Wait(0x656376cc000)
	/usr/local/go/src/os/exec/exec.go:1 +0x1
sigs.k8s.io/controller-runtime/pkg/internal/testing/process.(*State).Start.func1()
	/root/process.go:1 +0x1

goroutine 4 [IO wait]:
internal/poll.runtime_pollWait(0x1)
	/usr/local/go/src/runtime/netpoll.go:1 +0x1
`
	want := "2× sync.(*WaitGroup).Wait in github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret.runner.Start\n" +
		"1× sync.(*Mutex).Lock in sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue.(*priorityqueue[...]).Done"
	if got := StuckGoroutines(dump); got != want {
		t.Fatalf("StuckGoroutines = %q, want %q", got, want)
	}
}
