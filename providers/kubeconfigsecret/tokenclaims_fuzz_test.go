package kubeconfigsecret

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// maxNumericDate is the last second of year 9999, the latest expiry
// jwtLifetime accepts.
const maxNumericDate = 253402300799

// FuzzJWTLifetime feeds jwtLifetime bearer tokens from registered
// kubeconfigs: whoever wrote the Secret chose them, and the lifetime is
// shown to users. It checks that:
//   - any token, and any claims in a JWT: no panic; a refused token gives the zero lifetime; an
//     accepted one is a compact JWT whose claims are a JSON object, expires
//     within [1970-01-01T00:00:01Z, 9999-12-31T23:59:59Z] and was issued
//     either never (zero: unknown, or not before the expiry) or after the
//     epoch and strictly before it expires;
//   - a token built from the fuzzer's iat, nbf and exp (each present or
//     not) reads back exactly: exp if it is a date in range, else refused;
//     nbf, else iat, as the issue date when in range and before exp.
func FuzzJWTLifetime(f *testing.F) {
	f.Add("", `{"iss":"kubernetes/serviceaccount","iat":1700000000,"exp":1700003600}`, int64(1700000000), int64(0), int64(1700003600), uint8(5))
	f.Add("", `{"nbf":1700000000,"iat":1600000000,"exp":1700086400.75}`, int64(1600000000), int64(1700000000), int64(1700086400), uint8(7))
	f.Add("", `{"iat":1700003600,"exp":1700000000}`, int64(1700003600), int64(0), int64(1700000000), uint8(5)) // expires before issued
	f.Add("", `{"exp":0.5}`, int64(0), int64(0), int64(1), uint8(4))                                           // the epoch, once truncated
	f.Add("", `{"exp":253402300800}`, int64(0), int64(0), int64(253402300800), uint8(4))                       // year 10000
	f.Add("", `{"exp":-1,"iat":-5}`, int64(-5), int64(0), int64(-1), uint8(5))
	f.Add("", `{"exp":"1700000000"}`, int64(0), int64(-1), int64(9223372036854775807), uint8(6))
	f.Add("", `{"exp":1e400}`, int64(1), int64(1), int64(1), uint8(7))
	f.Add("", `[1700000000]`, int64(0), int64(0), int64(0), uint8(0))
	f.Add("", `null`, int64(0), int64(0), int64(0), uint8(0))
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJleHAiOjE3MDAwMDAwMDB9", "", int64(0), int64(0), int64(0), uint8(0)) // two parts
	f.Add("opaque-token-0123456789abcdef", "", int64(0), int64(0), int64(0), uint8(0))
	f.Add("a.eyJleHAiOjE3MDAwMDAwMDB9==.c", "", int64(0), int64(0), int64(0), uint8(0))
	f.Add("a.%%%.c", "", int64(0), int64(0), int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, token, claims string, iat, nbf, exp int64, present uint8) {
		// Both the raw token and one with the fuzzer's claims, which it
		// mutates as JSON rather than as base64.
		for _, token := range []string{token, fuzzJWT(claims)} {
			lt, ok := jwtLifetime(token)
			checkLifetime(t, token, lt, ok)
		}

		var set []string
		for i, c := range []struct {
			name string
			v    int64
		}{{"iat", iat}, {"nbf", nbf}, {"exp", exp}} {
			if present&(1<<i) != 0 {
				set = append(set, fmt.Sprintf("%q:%d", c.name, c.v))
			}
		}
		token = fuzzJWT("{" + strings.Join(set, ",") + "}")
		lt, ok := jwtLifetime(token)
		checkLifetime(t, token, lt, ok)
		inRange := func(bit uint8, v int64) bool { return present&bit != 0 && v >= 1 && v <= maxNumericDate }
		var want TokenLifetime
		if inRange(4, exp) {
			want.ExpiresAt = time.Unix(exp, 0).UTC()
			switch {
			case inRange(2, nbf):
				want.IssuedAt = time.Unix(nbf, 0).UTC()
			case inRange(1, iat):
				want.IssuedAt = time.Unix(iat, 0).UTC()
			}
			if !want.IssuedAt.Before(want.ExpiresAt) {
				want.IssuedAt = time.Time{}
			}
		}
		if ok != inRange(4, exp) || lt != want {
			t.Fatalf("jwtLifetime(%s) = %+v, %v; want %+v", token, lt, ok, want)
		}
	})
}

// checkLifetime holds for what jwtLifetime makes of any token.
func checkLifetime(t *testing.T, token string, lt TokenLifetime, ok bool) {
	t.Helper()
	if !ok {
		if lt != (TokenLifetime{}) {
			t.Fatalf("refused %q with lifetime %+v", token, lt)
		}
		return
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("accepted %q, which is not a compact JWT", token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	var claims map[string]any
	if err != nil || json.Unmarshal(payload, &claims) != nil || claims == nil {
		t.Fatalf("accepted %q, whose claims are not a JSON object: %q", token, payload)
	}
	exp := lt.ExpiresAt
	if exp.Location() != time.UTC || exp.Unix() < 1 || exp.Unix() > maxNumericDate || exp.Nanosecond() != 0 {
		t.Fatalf("accepted %q expiring %v", token, exp)
	}
	if iat := lt.IssuedAt; !iat.IsZero() && (iat.Location() != time.UTC || iat.Unix() < 1 || !iat.Before(exp)) {
		t.Fatalf("accepted %q issued %v, expiring %v", token, iat, exp)
	}
}

// fuzzJWT is an unsigned compact JWT with claims as its payload.
func fuzzJWT(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","kid":"k"}`)) + "." + enc([]byte(claims)) + "." + enc([]byte("not-a-signature"))
}
