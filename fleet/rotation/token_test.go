package rotation

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"
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
