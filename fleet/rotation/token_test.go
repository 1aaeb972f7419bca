package rotation

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func jwt(claims string) string {
	return "e30." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".sig"
}

func TestParseToken(t *testing.T) {
	bound := `{"exp":1800000000,"iat":1797408000,"kubernetes.io":{"namespace":"etcdfleet-system",` +
		`"serviceaccount":{"name":"etcdfleet","uid":"u1"},"secret":{"name":"etcdfleet-registration-abc","uid":"s1"}}}`
	tok, err := ParseToken(jwt(bound))
	if err != nil {
		t.Fatal(err)
	}
	want := Token{IssuedAt: time.Unix(1797408000, 0).UTC(), ExpiresAt: time.Unix(1800000000, 0).UTC(),
		Namespace: "etcdfleet-system", ServiceAccount: "etcdfleet", SecretName: "etcdfleet-registration-abc", SecretUID: "s1"}
	if tok != want {
		t.Fatalf("got %+v, want %+v", tok, want)
	}
	unbound := `{"exp":1800000000,"kubernetes.io":{"namespace":"ns","serviceaccount":{"name":"sa"}}}`
	if _, err := ParseToken(jwt(unbound)); !errors.Is(err, ErrNotBound) {
		t.Fatalf("unbound token: %v, want ErrNotBound", err)
	}
	for name, bad := range map[string]string{
		"not a JWT": "abc", "no expiry": jwt(`{"kubernetes.io":{"namespace":"ns","serviceaccount":{"name":"sa"}}}`),
		"not JSON": jwt(`{`), "no ServiceAccount": jwt(`{"exp":1800000000}`),
	} {
		if _, err := ParseToken(bad); err == nil || errors.Is(err, ErrNotBound) {
			t.Errorf("%s: %v, want an error", name, err)
		}
	}
}

// The expiry stored beside a minted token is the token's own exp claim, not
// status.expirationTimestamp, which the apiserver reads from its clock
// separately and which CI saw a second off the claim.
func TestExpiryOfIsTheClaim(t *testing.T) {
	claim := time.Unix(1_800_000_000, 0)
	tr := &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{
		Token:               jwt(`{"exp":1800000000,"iat":1799996400,"kubernetes.io":{"namespace":"n","serviceaccount":{"name":"s"}}}`),
		ExpirationTimestamp: metav1.NewTime(claim.Add(-time.Second)),
	}}
	if got := ExpiryOf(tr); !got.Equal(claim) {
		t.Fatalf("ExpiryOf = %v, want the exp claim %v", got, claim)
	}
	tr.Status.Token = "not-a-jwt"
	if got := ExpiryOf(tr); !got.Equal(claim.Add(-time.Second)) {
		t.Fatalf("an opaque token falls back to the status: got %v", got)
	}
}
