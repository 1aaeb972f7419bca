package lincheck

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
)

// Options size a workload. Zero values take the defaults.
type Options struct {
	// Clients is how many clients run concurrently (default 3).
	Clients int
	// Keys is the size of the key set (default 4): few keys, so that
	// clients contend on them.
	Keys int
	// Rate is the operations per second of all clients together
	// (default 20).
	Rate float64
	// MaxOps ends the workload early once this many operations were issued
	// (default 3000), which bounds the checker's work.
	MaxOps int
	// OpTimeout bounds one operation (default 2 s); a write still without
	// a response then has an unknown outcome.
	OpTimeout time.Duration
}

func (o *Options) defaults() {
	if o.Clients <= 0 {
		o.Clients = 3
	}
	if o.Keys <= 0 {
		o.Keys = 4
	}
	if o.Rate <= 0 {
		o.Rate = 20
	}
	if o.MaxOps <= 0 {
		o.MaxOps = 3000
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 2 * time.Second
	}
}

// Workload is clients running operations against one etcd cluster and
// recording them.
type Workload struct {
	name    string
	prefix  string
	opts    Options
	kv      clientv3.KV
	limiter *rate.Limiter
	issued  atomic.Int64
	stop    context.CancelFunc
	wg      sync.WaitGroup

	mu  sync.Mutex
	ops []Op
}

// Run starts the clients on kv, under a key prefix of their own so that
// earlier runs on the same cluster do not disturb the model. name says
// which cluster this is, for messages.
func Run(kv clientv3.KV, name string, opts Options) *Workload {
	opts.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	w := &Workload{name: name, prefix: fmt.Sprintf("lincheck/%d/", time.Now().UnixNano()), opts: opts, kv: kv,
		limiter: rate.NewLimiter(rate.Limit(opts.Rate), 1), stop: cancel}
	for i := range opts.Clients {
		w.wg.Add(1)
		go w.client(ctx, i)
	}
	return w
}

// Stop stops issuing operations, waits for those in flight (at most
// OpTimeout) and returns the history, in call order.
func (w *Workload) Stop() History {
	w.stop()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	ops := slices.Clone(w.ops)
	slices.SortStableFunc(ops, func(a, b Op) int { return a.Call.Compare(b.Call) })
	return History{Name: w.name, Ops: ops}
}

// client runs one client until ctx ends or MaxOps is reached. After a
// write with an unknown outcome it only reads until a read succeeds: each
// unknown write can be linearized anywhere after its call, so many of
// them during an outage would make the check's search explode, while
// they tell little.
func (w *Workload) client(ctx context.Context, id int) {
	defer w.wg.Done()
	rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	known := map[string]int64{} // key -> mod revision this client last saw
	readOnly := false
	for seq := 0; ; seq++ {
		if w.limiter.Wait(ctx) != nil || w.issued.Add(1) > int64(w.opts.MaxOps) {
			return
		}
		in := w.choose(rng, id, seq, known, readOnly)
		op := Op{Client: id, Input: in, Call: time.Now()}
		op.Output = w.do(in)
		op.Return = time.Now()
		switch {
		case op.Output.Outcome == Unknown:
			readOnly = true
		case op.Output.Outcome == OK && in.Kind == Get:
			readOnly = false
		}
		if op.Output.Outcome == OK {
			known[in.Key] = seenRev(op)
		}
		w.mu.Lock()
		w.ops = append(w.ops, op)
		w.mu.Unlock()
	}
}

// choose picks the next operation: 40% Get, 30% Put, 15% CAS against the
// revision this client last saw, 15% Delete. Values are unique.
func (w *Workload) choose(rng *rand.Rand, id, seq int, known map[string]int64, readOnly bool) Input {
	in := Input{Key: fmt.Sprintf("k%d", rng.IntN(w.opts.Keys)), Value: fmt.Sprintf("c%d-%d", id, seq)}
	switch p := rng.IntN(100); {
	case readOnly || p < 40:
		in.Kind, in.Value = Get, ""
	case p < 70:
		in.Kind = Put
	case p < 85:
		in.Kind, in.ExpectRev = CAS, known[in.Key]
	default:
		in.Kind, in.Value = Delete, ""
	}
	return in
}

// seenRev is the key's mod revision after an OK operation (0: absent).
func seenRev(o Op) int64 {
	switch {
	case o.Input.Kind == Delete:
		return 0
	case o.changesKey():
		return o.Output.Revision
	}
	return o.Output.ModRev
}

// do runs one operation. Its context is not the workload's: stopping the
// workload lets operations in flight finish rather than turning them into
// unknown outcomes.
func (w *Workload) do(in Input) Output {
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.OpTimeout)
	defer cancel()
	key := w.prefix + in.Key
	var out Output
	var err error
	switch in.Kind {
	case Get:
		var r *clientv3.GetResponse
		if r, err = w.kv.Get(ctx, key); err == nil {
			out.Revision = r.Header.Revision
			readKey(&out, r.Kvs)
		}
	case Put:
		var r *clientv3.PutResponse
		if r, err = w.kv.Put(ctx, key, in.Value); err == nil {
			out.Revision = r.Header.Revision
		}
	case Delete:
		var r *clientv3.DeleteResponse
		if r, err = w.kv.Delete(ctx, key); err == nil {
			out.Revision, out.Deleted = r.Header.Revision, r.Deleted
		}
	case CAS:
		var r *clientv3.TxnResponse
		r, err = w.kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", in.ExpectRev)).
			Then(clientv3.OpPut(key, in.Value)).Else(clientv3.OpGet(key)).Commit()
		if err == nil {
			out.Revision, out.Succeeded = r.Header.Revision, r.Succeeded
			if !r.Succeeded {
				readKey(&out, r.Responses[0].GetResponseRange().Kvs)
			}
		}
	}
	if err != nil {
		// A read that failed constrains nothing; a write that failed may
		// have been applied before the error reached us.
		out = Output{Outcome: Unknown, Err: err.Error()}
		if in.Kind == Get {
			out.Outcome = Failed
		}
	}
	return out
}

func readKey(out *Output, kvs []*mvccpb.KeyValue) {
	if len(kvs) == 1 {
		out.Found, out.Value, out.ModRev = true, string(kvs[0].Value), kvs[0].ModRevision
	}
}

// WroteAfter says whether some write got a response after t: a benchmark
// waits for it so that the write gap spanning an outage is closed.
func (w *Workload) WroteAfter(t time.Time) bool {
	return len(w.okAfter(t, func(o Op) bool { return o.Input.Kind != Get })) > 0
}

// ReadEveryKeyAfter says whether every key was read successfully by an
// operation called after t. Called at the heal, it tells when the history
// reaches far enough: a write lost in the heal shows up only as a later
// read that misses it.
func (w *Workload) ReadEveryKeyAfter(t time.Time) bool {
	keys := map[string]bool{}
	for _, o := range w.okAfter(t, func(o Op) bool { return o.Input.Kind == Get }) {
		keys[o.Input.Key] = true
	}
	return len(keys) == w.opts.Keys
}

// okAfter returns the OK operations called after t that match.
func (w *Workload) okAfter(t time.Time, match func(Op) bool) []Op {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Op
	for _, o := range w.ops {
		if o.Output.Outcome == OK && o.Call.After(t) && match(o) {
			out = append(out, o)
		}
	}
	return out
}
