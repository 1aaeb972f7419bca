package kubeconfigsecret

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBudgetCapsResponses: a body up to the cap reads whole; one byte more
// fails and exceeds the budget, unless it is a watch, whose stream only
// ends; a protocol upgrade is not wrapped.
func TestBudgetCapsResponses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", len(r.URL.Path)))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		path     string
		watch    bool
		tooLarge bool
		exceeded bool
	}{
		{path: "/" + strings.Repeat("a", 99), tooLarge: false},
		{path: "/" + strings.Repeat("a", 100), tooLarge: true, exceeded: true},
		{path: "/" + strings.Repeat("a", 500), watch: true, tooLarge: true, exceeded: false},
	} {
		b := newBudget(100, 10)
		c := &http.Client{Transport: b.wrap(http.DefaultTransport)}
		url := srv.URL + tc.path
		if tc.watch {
			url += "?watch=true"
		}
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var tl *ErrResponseTooLarge
		if got := errors.As(err, &tl); got != tc.tooLarge {
			t.Errorf("%d bytes (watch %v): too large = %v (%v), want %v", len(tc.path), tc.watch, got, err, tc.tooLarge)
		}
		if len(body) > 100 {
			t.Errorf("%d bytes read past the cap of 100", len(body))
		}
		if got := b.reason() != ""; got != tc.exceeded {
			t.Errorf("%d bytes (watch %v): budget exceeded = %v, want %v", len(tc.path), tc.watch, got, tc.exceeded)
		}
	}
}

func TestBudgetCountsObjects(t *testing.T) {
	b := newBudget(100, 2)
	h := b.counter()
	h.OnAdd(1, false)
	h.OnAdd(2, false)
	h.OnDelete(1)
	h.OnAdd(3, false)
	if b.reason() != "" {
		t.Fatalf("exceeded at 2 objects of 2: %s", b.reason())
	}
	h.OnAdd(4, false)
	select {
	case <-b.exceeded:
	default:
		t.Fatal("3 objects of 2 did not exceed the budget")
	}
}
