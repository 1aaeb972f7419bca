package kubelet

import (
	"fmt"
	"net"
	"os"
	"sync"
)

// IPAllocator hands out loopback addresses, one per Pod, like a CNI plugin.
// Shared by every kubelet of one test process.
//
// The second octet is derived from the PID so that test packages running in
// parallel (go test runs several binaries at once) rarely pick the same
// range; an address whose etcd ports are already bound is skipped anyway.
// Freed addresses are not reused, so a recreated Pod never races a socket
// of its predecessor still in TIME_WAIT.
type IPAllocator struct {
	mu   sync.Mutex
	base int
	next int
}

// NewIPAllocator returns an allocator over 127.<pid-derived>.0.1 onward.
func NewIPAllocator() *IPAllocator {
	return &IPAllocator{base: 20 + os.Getpid()%230, next: 1}
}

// Allocate returns a free loopback IP.
func (a *IPAllocator) Allocate() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for tries := 0; tries < 1<<16; tries++ {
		n := a.next
		a.next++
		if n%256 == 0 || n%256 == 255 {
			continue
		}
		ip := fmt.Sprintf("127.%d.%d.%d", a.base, (n/256)%256, n%256)
		if portsFree(ip, 2379, 2380, 2381) {
			return ip, nil
		}
	}
	return "", fmt.Errorf("no free loopback address in 127.%d.0.0/16", a.base)
}

func portsFree(ip string, ports ...int) bool {
	for _, p := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, p))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}
