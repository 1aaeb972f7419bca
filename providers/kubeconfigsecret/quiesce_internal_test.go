package kubeconfigsecret

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestQuiesceWaitsForRequestsInFlightAndRefusesLaterOnes checks the gate
// as a real HTTP server sees it: drain returns only once the request the
// server holds was answered, and no request reaches the server after the
// gate closed.
func TestQuiesceWaitsForRequestsInFlightAndRefusesLaterOnes(t *testing.T) {
	hold := make(chan struct{})
	var received atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		if r.URL.Path == "/slow" {
			<-hold
		}
	}))
	defer srv.Close()
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	defer release() // before Close, which waits for the held request
	g := newQuiesceGate()
	hc := &http.Client{Transport: g.wrap(http.DefaultTransport)}

	slow := make(chan error, 1)
	go func() {
		resp, err := hc.Get(srv.URL + "/slow")
		if err == nil {
			resp.Body.Close()
		}
		slow <- err
	}()
	for received.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	drained := make(chan error, 1)
	go func() { drained <- g.drain(context.Background()) }()
	select {
	case err := <-drained:
		t.Fatalf("drain returned (%v) while a request was in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := hc.Get(srv.URL + "/later"); !errors.Is(err, ErrQuiesced) {
		t.Fatalf("a request after the gate closed: got %v, want ErrQuiesced", err)
	}
	release()
	if err := <-slow; err != nil {
		t.Fatalf("the request in flight failed: %v", err)
	}
	if err := <-drained; err != nil {
		t.Fatalf("drain: %v", err)
	}
	if n := received.Load(); n != 1 {
		t.Fatalf("the server received %d requests, want only the one sent before the gate closed", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := g.drain(ctx); err != nil {
		t.Fatalf("a second drain: %v", err)
	}
}

// TestQuiesceGivesUpAtItsDeadline checks that a request the server never
// answers holds drain only until its context ends.
func TestQuiesceGivesUpAtItsDeadline(t *testing.T) {
	g := newQuiesceGate()
	if !g.enter() {
		t.Fatal("an open gate refused a request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("drain with a request stuck in flight: got %v, want the deadline", err)
	}
	g.leave()
}

// TestQuiesceCountsAnAbandonedRequestAWhile checks that a request whose
// context ended while the server held it keeps drain waiting for
// abandonedGrace: its bytes may be on the wire, and the apiserver may
// receive it after the caller gave up (the fence e2e saw preflight
// requests arrive after a fence release that way).
func TestQuiesceCountsAnAbandonedRequestAWhile(t *testing.T) {
	hold := make(chan struct{})
	var received atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hold)
	g := newQuiesceGate()
	hc := &http.Client{Transport: g.wrap(http.DefaultTransport)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		_, err := hc.Do(req)
		done <- err
	}()
	for received.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoned request: got %v, want context.Canceled", err)
	}
	abandoned := time.Now()
	if err := g.drain(context.Background()); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if waited := time.Since(abandoned); waited < abandonedGrace/2 {
		t.Fatalf("drain returned %s after the request was abandoned, want about %s", waited, abandonedGrace)
	}
}

// TestQuiesceWaitsForARemovedConnection checks that Quiesce still finds
// the requests of a connection whose Secret was removed: the removal ends
// the ownership, and the fence is released right after Quiesce returns.
func TestQuiesceWaitsForARemovedConnection(t *testing.T) {
	p := &Provider{conns: map[string]*conn{}, retired: map[string][]*quiesceGate{}}
	c := &conn{p: p, name: "gone", gate: newQuiesceGate()}
	if !c.gate.enter() {
		t.Fatal("an open gate refused a request")
	}
	p.mu.Lock()
	p.retireLocked(c.name, c.retire())
	p.mu.Unlock()
	if c.gate.enter() {
		t.Fatal("a retired connection's gate admitted a request")
	}
	drained := make(chan error, 1)
	go func() { drained <- p.Quiesce(context.Background(), "gone") }()
	select {
	case err := <-drained:
		t.Fatalf("Quiesce returned (%v) while the removed connection had a request in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	c.gate.leave()
	if err := <-drained; err != nil {
		t.Fatalf("Quiesce: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		n := len(p.retired)
		p.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an idle retired gate was kept")
		}
		time.Sleep(time.Millisecond)
	}
}
