package kubeconfigsecret

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// TokenLifetime is the validity of a kubeconfig's bearer token as the
// token itself states it.
type TokenLifetime struct {
	// IssuedAt is the nbf claim, else iat; zero when the token has neither.
	IssuedAt time.Time
	// ExpiresAt is the exp claim.
	ExpiresAt time.Time
}

// tokenLifetimeOf reads the lifetime of the current context's bearer token
// from its JWT claims. ok is false for a kubeconfig that does not parse, a
// user without a token, a token that is not a JWT, or one without exp.
//
// The signature is NOT verified, on purpose: only the workload apiserver
// can, and the point is to know without calling it. The result is shown to
// users (when to rotate) and never trusted for any decision: a forged exp
// only misdates a warning about the forger's own token.
func tokenLifetimeOf(raw []byte) (TokenLifetime, bool) {
	kc, err := clientcmd.Load(raw)
	if err != nil {
		return TokenLifetime{}, false
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || kc.AuthInfos[ctx.AuthInfo] == nil {
		return TokenLifetime{}, false
	}
	return jwtLifetime(kc.AuthInfos[ctx.AuthInfo].Token)
}

// jwtLifetime decodes the claims (the middle part) of a JWT in compact
// serialisation, without verifying it (see tokenLifetimeOf).
func jwtLifetime(token string) (TokenLifetime, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return TokenLifetime{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return TokenLifetime{}, false
	}
	var claims struct {
		Exp, Iat, Nbf *json.Number
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return TokenLifetime{}, false
	}
	exp, ok := unixTime(claims.Exp)
	if !ok {
		return TokenLifetime{}, false
	}
	lt := TokenLifetime{ExpiresAt: exp}
	if nbf, ok := unixTime(claims.Nbf); ok {
		lt.IssuedAt = nbf
	} else if iat, ok := unixTime(claims.Iat); ok {
		lt.IssuedAt = iat
	}
	if !lt.IssuedAt.Before(lt.ExpiresAt) {
		lt.IssuedAt = time.Time{} // no lifetime to speak of
	}
	return lt, true
}

// unixTime reads a NumericDate claim (seconds since the epoch, possibly
// fractional); ok is false when it is absent, not a number or below one
// second: the fraction is dropped, and 0.5 would be the epoch itself, which
// is no more a date than 0.
func unixTime(n *json.Number) (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	f, err := n.Float64()
	// Beyond year 9999 is not a date anyone will wait for.
	if err != nil || f < 1 || f > 253402300799 {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0).UTC(), true
}

// fromSpec copies what the Secret says into the state.
func (st *ClusterState) fromSpec(s secretSpec) {
	st.SecretUID, st.Paused, st.Token = s.uid, s.paused, s.token
}
