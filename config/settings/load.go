package settings

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
)

// AddFlags registers a flag for every setting, with its default, plus
// --config for a config file.
func AddFlags(fs *pflag.FlagSet) {
	d := Default()
	fs.String("config", "", "Path of a YAML config file; its keys are the ones in docs/configuration.md. Flags and ETCDFLEET_* environment variables override it.")
	for _, s := range Settings(&d) {
		help := fmt.Sprintf("%s (env %s)", s.Help, s.Env())
		switch p := s.ptrValue().(type) {
		case string:
			fs.String(s.Flag, p, help)
		case int:
			fs.Int(s.Flag, p, help)
		case float64:
			fs.Float64(s.Flag, p, help)
		case bool:
			fs.Bool(s.Flag, p, help)
		case time.Duration:
			fs.Duration(s.Flag, p, help)
		}
	}
}

func (s Setting) ptrValue() any {
	switch p := s.ptr.(type) {
	case *string:
		return *p
	case *int:
		return *p
	case *float64:
		return *p
	case *bool:
		return *p
	case *time.Duration:
		return *p
	}
	return nil
}

// Load reads the config file named by --config (if any), then environment
// variables, then flags that were set, over the defaults.
func Load(fs *pflag.FlagSet) (Config, error) {
	v := viper.New()
	c := Default()
	for _, s := range Settings(&c) {
		v.SetDefault(s.Key, s.ptrValue())
		if err := v.BindEnv(s.Key, s.Env()); err != nil {
			return c, err
		}
		if f := fs.Lookup(s.Flag); f != nil {
			if err := v.BindPFlag(s.Key, f); err != nil {
				return c, err
			}
		}
	}
	if f := fs.Lookup("config"); f != nil && f.Value.String() != "" {
		v.SetConfigFile(f.Value.String())
		if err := v.ReadInConfig(); err != nil {
			return c, fmt.Errorf("config file %s: %w", f.Value.String(), err)
		}
	}
	if err := v.Unmarshal(&c); err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	return c, c.Validate()
}

// Validate rejects values the manager cannot run with, naming the setting.
func (c Config) Validate() error {
	var errs []string
	if c.Namespace == "" {
		errs = append(errs, "namespace must not be empty")
	}
	if !slices.Contains(EtcdAccessModes, c.EtcdAccess) {
		errs = append(errs, fmt.Sprintf("etcdAccess %q: want one of %s", c.EtcdAccess, strings.Join(EtcdAccessModes, ", ")))
	}
	if c.AgentImage == "" {
		errs = append(errs, "agentImage must not be empty")
	}
	if c.Workers < 1 {
		errs = append(errs, "workers must be at least 1")
	}
	if c.WorkersPerCluster < 1 || c.WorkersPerCluster > c.Workers {
		errs = append(errs, fmt.Sprintf("workersPerCluster must be between 1 and workers (%d), got %d", c.Workers, c.WorkersPerCluster))
	}
	if c.Limiter.Rate <= 0 || c.Limiter.Burst < 1 {
		errs = append(errs, "limiter.rate must be > 0 and limiter.burst at least 1 (the limiter paces; it cannot halt)")
	}
	if c.Snapshots.MaxConcurrent < 1 || c.Snapshots.StartsPerMinute <= 0 {
		errs = append(errs, "snapshots.maxConcurrent must be at least 1 and snapshots.startsPerMinute > 0 (pacing never halts backups)")
	}
	if err := c.ReplacementPolicy().Validate(); err != nil {
		errs = append(errs, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	for _, st := range Settings(&c) {
		// The replacement durations are the policy's to judge (above).
		if d, ok := st.ptr.(*time.Duration); ok && *d <= 0 && !strings.HasPrefix(st.Key, "replacement.") {
			errs = append(errs, fmt.Sprintf("%s must be > 0, got %s", st.Key, *d))
		}
	}
	if c.Clusters.FailureThreshold < 1 || c.Clusters.QPS <= 0 || c.Clusters.Burst < 1 {
		errs = append(errs, "clusters.failureThreshold and clusters.burst must be at least 1 and clusters.qps > 0")
	}
	if sh := c.Sharding; sh.Enabled && sh.LeaseDuration < 3*time.Second {
		// Fences are renewed every third of it, and Lease durations are
		// whole seconds.
		errs = append(errs, fmt.Sprintf("sharding.leaseDuration must be at least 3s, got %s", sh.LeaseDuration))
	}
	if c.Clusters.ProbeTimeout >= c.Clusters.ProbeInterval {
		errs = append(errs, "clusters.probeTimeout must be shorter than clusters.probeInterval")
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid configuration: %s", strings.Join(errs, "; "))
	}
	return nil
}

// ReplacementPolicy is the replacement settings as the policy they configure.
func (c Config) ReplacementPolicy() replacement.Policy {
	r := c.Replacement
	return replacement.Policy{InitialBackoff: r.InitialBackoff, MaxBackoff: r.MaxBackoff, Cap: int32(r.Cap),
		Window: r.Window, HealthyReset: r.HealthyReset}
}
