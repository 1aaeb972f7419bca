package kubeconfigsecret

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
)

// DefaultMaxResponseBytes caps one response body of a workload apiserver
// (Options.MaxResponseBytes). Every registered cluster shares the
// manager's memory (1 GiB in the chart), and the watched kinds' lists are
// narrowed by labels that only the server honours: a hostile or broken
// apiserver could answer one list with gigabytes (security review M5).
// Decoding takes a few times the bytes, and a cluster's informers list
// about seven kinds at once, so 16 MiB keeps one cluster's worst case
// well under half the limit, while etcdfleet's own objects of a real
// cluster list in a few hundred KiB.
const DefaultMaxResponseBytes = 16 << 20

// DefaultMaxObjects caps the objects one cluster's caches hold
// (Options.MaxObjects): a hundred etcd clusters of five members, with
// their Pods, claims and a week of hourly snapshots each, stay under a
// fifth of it.
const DefaultMaxObjects = 100_000

// budget bounds what one engagement attempt of one cluster may make the
// manager hold: each response body (the transport wrapper) and the number
// of cached objects (an informer handler). Past either, it records why and
// signals exceeded once; the owner then disengages the cluster, which
// drops its caches.
type budget struct {
	maxBytes   int64
	maxObjects int64
	objects    atomic.Int64
	once       sync.Once
	why        atomic.Pointer[string]
	exceeded   chan struct{} // closed on the first excess
}

func newBudget(maxBytes, maxObjects int64) *budget {
	return &budget{maxBytes: maxBytes, maxObjects: maxObjects, exceeded: make(chan struct{})}
}

// exceed records the first excess and signals it.
func (b *budget) exceed(why string) {
	b.once.Do(func() {
		b.why.Store(&why)
		close(b.exceeded)
	})
}

// reason is why the budget was exceeded, "" while it was not.
func (b *budget) reason() string {
	if w := b.why.Load(); w != nil {
		return *w
	}
	return ""
}

// failure is the state of a cluster disengaged for exceeding the budget.
func (b *budget) failure() *failure {
	return &failure{reason: ReasonOverBudget, msg: b.reason() +
		"; disengaged, so its caches are dropped, and retried after backoff (a hostile or broken apiserver, or a cluster larger than Options.MaxResponseBytes and MaxObjects allow)"}
}

// wrap caps the body of every response except protocol upgrades (the
// port-forward streams, which bound their own reads).
func (b *budget) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err != nil || resp.Body == nil || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, err
		}
		resp.Body = &cappedBody{rc: resp.Body, left: b.maxBytes, b: b, watch: isWatch(r)}
		return resp, nil
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// isWatch tells a watch request: its body is a stream of events whose
// total grows with time, so reaching the cap only ends the stream, which
// the informer resumes from its last resourceVersion.
func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1" || strings.Contains(r.URL.Path, "/watch/")
}

// ErrResponseTooLarge is returned by a response body read past
// Options.MaxResponseBytes.
type ErrResponseTooLarge struct{ Limit int64 }

func (e *ErrResponseTooLarge) Error() string {
	return fmt.Sprintf("the workload apiserver's response exceeded %d bytes", e.Limit)
}

// cappedBody is http.MaxBytesReader for a client: it reads at most left
// bytes, then fails. Past the cap, a single response (not a watch) has
// exceeded the budget.
type cappedBody struct {
	rc    io.ReadCloser
	left  int64
	b     *budget
	watch bool
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return c.tooLarge()
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	if int64(n) > c.left {
		n = int(c.left)
		c.left = 0
		_, terr := c.tooLarge()
		return n, terr
	}
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) tooLarge() (int, error) {
	err := &ErrResponseTooLarge{Limit: c.b.maxBytes}
	if !c.watch {
		c.b.exceed(err.Error() + " (a single response)")
	}
	return 0, err
}

func (c *cappedBody) Close() error { return c.rc.Close() }

// counter counts the objects an informer holds, and exceeds the budget
// past MaxObjects. Updates and resyncs do not change the count; a relist
// delivers an add or a delete for each object that came or went.
func (b *budget) counter() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			if n := b.objects.Add(1); n > b.maxObjects {
				b.exceed(fmt.Sprintf("the cluster's caches hold more than %d objects", b.maxObjects))
			}
		},
		DeleteFunc: func(any) { b.objects.Add(-1) },
	}
}
