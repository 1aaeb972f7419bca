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
