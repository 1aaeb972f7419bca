package replacement

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatalf("the default policy is invalid: %v", err)
	}
	for field, mutate := range map[string]func(*Policy){
		"replacement.window":         func(p *Policy) { p.Window = 0 },
		"replacement.initialBackoff": func(p *Policy) { p.InitialBackoff = -time.Second },
		"replacement.healthyReset":   func(p *Policy) { p.HealthyReset = 0 },
		"replacement.cap":            func(p *Policy) { p.Cap = 0 },
		"replacement.maxBackoff":     func(p *Policy) { p.MaxBackoff = 48 * time.Hour },
	} {
		p := DefaultPolicy()
		mutate(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: got %v, want an error naming the field", field, err)
		}
	}
}
