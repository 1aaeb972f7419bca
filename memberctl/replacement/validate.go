package replacement

import (
	"errors"
	"fmt"
	"time"
)

// maxDuration bounds every duration of a Policy: a day is far beyond any
// sensible backoff or window, and keeps Backoff's doubling from overflowing.
const maxDuration = 24 * time.Hour

// Validate reports every field of p that would break the policy's promises:
// a non-positive window or cap would disable the cap, a non-positive
// backoff would replace in a hot loop, and a non-positive healthy period
// would reset the cap at once. Each error names the field by its settings
// key (replacement.<field>).
func (p Policy) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"initialBackoff", p.InitialBackoff}, {"maxBackoff", p.MaxBackoff}, {"window", p.Window}, {"healthyReset", p.HealthyReset}} {
		if d.v <= 0 || d.v > maxDuration {
			errs = append(errs, fmt.Errorf("replacement.%s must be > 0 and at most %s, got %s", d.name, maxDuration, d.v))
		}
	}
	if p.Cap < 1 {
		errs = append(errs, fmt.Errorf("replacement.cap must be at least 1, got %d", p.Cap))
	}
	if p.MaxBackoff < p.InitialBackoff {
		errs = append(errs, fmt.Errorf("replacement.maxBackoff (%s) must not be below replacement.initialBackoff (%s)", p.MaxBackoff, p.InitialBackoff))
	}
	return errors.Join(errs...)
}
