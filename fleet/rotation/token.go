package rotation

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Token is what a registered ServiceAccount token says of itself: its
// lifetime and, for a bound token, the ServiceAccount and the Secret it is
// bound to (the "kubernetes.io" private claims of TokenRequest tokens).
//
// It is read without verifying the signature, which only the workload
// apiserver can do; nothing here needs trust. The request for the next
// token is authenticated by this very token, so the apiserver refuses it
// if the claims are forged, and the binding it names must be a Secret of
// the registration, which the workload admission policy checks.
type Token struct {
	IssuedAt, ExpiresAt time.Time
	// Namespace and ServiceAccount the token is of.
	Namespace, ServiceAccount string
	// SecretName and SecretUID the token is bound to; empty when it is not
	// bound to a Secret.
	SecretName string
	SecretUID  types.UID
}

// ErrNotBound: a token bound to no Secret (a legacy token Secret's, or one
// from kubectl create token without --bound-object-kind). Its successor
// would be as unbound, and no unregister could revoke it: such a
// registration is not rotated.
var ErrNotBound = errors.New("the registered token is not bound to a Secret (mint it with etcdfleetctl register)")

// ParseToken reads the claims of a ServiceAccount JWT.
func ParseToken(jwt string) (Token, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return Token{}, errors.New("the registered credential is not a ServiceAccount token (a JWT)")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return Token{}, errors.New("the registered token's claims are not base64url")
	}
	var c struct {
		Exp, Iat, Nbf *json.Number
		K8s           *struct {
			Namespace      string `json:"namespace"`
			ServiceAccount *struct {
				Name string `json:"name"`
			} `json:"serviceaccount"`
			Secret *struct {
				Name string    `json:"name"`
				UID  types.UID `json:"uid"`
			} `json:"secret"`
		} `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return Token{}, errors.New("the registered token's claims are not JSON")
	}
	var t Token
	var ok bool
	if t.ExpiresAt, ok = unixTime(c.Exp); !ok {
		return Token{}, errors.New("the registered token states no expiry: nothing to rotate before")
	}
	if t.IssuedAt, ok = unixTime(c.Nbf); !ok {
		t.IssuedAt, _ = unixTime(c.Iat)
	}
	if c.K8s == nil || c.K8s.ServiceAccount == nil || c.K8s.Namespace == "" || c.K8s.ServiceAccount.Name == "" {
		return Token{}, errors.New("the registered token is not a ServiceAccount token of a TokenRequest")
	}
	t.Namespace, t.ServiceAccount = c.K8s.Namespace, c.K8s.ServiceAccount.Name
	if c.K8s.Secret == nil || c.K8s.Secret.Name == "" || c.K8s.Secret.UID == "" {
		return t, ErrNotBound
	}
	t.SecretName, t.SecretUID = c.K8s.Secret.Name, c.K8s.Secret.UID
	return t, nil
}

// unixTime reads a NumericDate claim; ok is false when absent or not a
// plausible date.
func unixTime(n *json.Number) (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil || f < 1 || f > 253402300799 {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0).UTC(), true
}
