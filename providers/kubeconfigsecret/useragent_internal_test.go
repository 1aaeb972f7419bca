package kubeconfigsecret

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestUserAgentNamesEachClient checks that the clients the provider keeps
// for a cluster send the user agent Options.UserAgent gives their purpose,
// as a real HTTP server receives it, and that the default names none of
// the caller.
func TestUserAgentNamesEachClient(t *testing.T) {
	var (
		mu   sync.Mutex
		seen = map[string]string{} // path -> user agent
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.UserAgent()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"gitVersion":"v1.0.0","kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1"}`))
	}))
	defer srv.Close()
	ua := func(purpose string) string { return "caller/" + purpose + " (replica r7)" }
	cfg := &rest.Config{Host: srv.URL}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	probe, err := probeClient(cfg, time.Second, ua(PurposeProbe))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := serverVersion(ctx, probe); err != nil {
		t.Fatal(err)
	}
	rights, _, err := newRightsWatch(cfg, nil, ua(PurposeAccessReview))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rights.ssar.Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for path, want := range map[string]string{
		"/version": "caller/probe (replica r7)",
		"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": "caller/access-review (replica r7)",
	} {
		if seen[path] != want {
			t.Errorf("%s was sent with user agent %q, want %q", path, seen[path], want)
		}
	}
	if got := (Options{}).withDefaults().UserAgent(PurposeProbe); got != "kubeconfigsecret/probe" {
		t.Errorf("default user agent %q", got)
	}
}
