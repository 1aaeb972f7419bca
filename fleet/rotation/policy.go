package rotation

import "time"

// DefaultLeftFraction: a token is rotated once less than a third of its
// lifetime is left (10 days of register's 30). That is well before the
// dashboard's CredentialsExpiring warning at a fifth, so a rotation that
// works never warns, and it leaves a third of the lifetime to retry one
// that fails, and for a human to see why, before the cluster stops
// healing.
const DefaultLeftFraction = 1.0 / 3

// DefaultUnknownLifetimeWindow is the window of a token that states its
// expiry but not when it was issued: no lifetime to take a fraction of.
const DefaultUnknownLifetimeWindow = 24 * time.Hour

// Policy says when a token is due for rotation.
type Policy struct {
	// Window, if positive, rotates a token once less than Window is left
	// (the registration's TokenRotateBeforeAnnotation); otherwise
	// LeftFraction of its lifetime.
	Window time.Duration
	// LeftFraction of the lifetime (default DefaultLeftFraction).
	LeftFraction float64
}

// Action is what to do with a token now.
type Action int

const (
	// Wait: not due yet; look again at the time Decide returns.
	Wait Action = iota
	// Rotate now.
	Rotate
	// Expired: too late. An expired token cannot authenticate the request
	// for its successor; only etcdfleetctl register can renew it.
	Expired
)

// RotateAt is when a token issued at issued (zero: unknown) and expiring
// at expires is due. Never before half its lifetime has passed, whatever
// the window: when the apiserver grants less than the window (its
// --service-account-max-token-expiration), each new token would otherwise
// be due at once, and the manager would mint tokens in a loop.
func (p Policy) RotateAt(issued, expires time.Time) time.Time {
	known := !issued.IsZero() && issued.Before(expires)
	left := p.Window
	if left <= 0 {
		frac := p.LeftFraction
		if frac <= 0 || frac >= 1 {
			frac = DefaultLeftFraction
		}
		if !known {
			left = DefaultUnknownLifetimeWindow
		} else {
			left = time.Duration(frac * float64(expires.Sub(issued)))
		}
	}
	at := expires.Add(-left)
	if known {
		if half := issued.Add(expires.Sub(issued) / 2); at.Before(half) {
			at = half
		}
	}
	return at
}

// Decide says what to do at now with a token issued at issued and
// expiring at expires, and, for Wait, until when.
func (p Policy) Decide(now, issued, expires time.Time) (Action, time.Time) {
	switch at := p.RotateAt(issued, expires); {
	case !now.Before(expires):
		return Expired, time.Time{}
	case now.Before(at):
		return Wait, at
	default:
		return Rotate, now
	}
}
