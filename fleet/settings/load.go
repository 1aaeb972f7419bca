package settings

import (
	"errors"
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
	fs.String("config", "", "Path of a YAML config file; its keys are the ones in docs/configuration.md (the management chart renders one from its config values). Flags and ETCDFLEET_* environment variables override it.")
	for _, s := range Settings(&d) {
		help := fmt.Sprintf("%s (config key %s, env %s)", s.Help, s.Key, s.Env())
		switch p := s.Get().(type) {
		case string:
			fs.String(s.Flag, p, help)
		case int:
			fs.Int(s.Flag, p, help)
		case int32:
			fs.Int32(s.Flag, p, help)
		case float64:
			fs.Float64(s.Flag, p, help)
		case bool:
			fs.Bool(s.Flag, p, help)
		case time.Duration:
			fs.Duration(s.Flag, p, help)
		default:
			panic(fmt.Sprintf("settings: %s has type %T, which has no flag kind", s.Key, p))
		}
	}
}

// Load reads the config file named by --config (if any), then environment
// variables, then flags that were set, over the defaults, and validates
// the result.
func Load(fs *pflag.FlagSet) (Config, error) {
	c, err := load(fs)
	if err != nil {
		return c, err
	}
	return c, c.Validate()
}

// load is Load without the validation.
func load(fs *pflag.FlagSet) (Config, error) {
	v := viper.New()
	c := Default()
	for _, s := range Settings(&c) {
		v.SetDefault(s.Key, s.Get())
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
	return c, nil
}

// Validate rejects values the manager cannot run with, naming the setting:
// each part's own Validate, the manager's rules, and, for every duration
// no part has judged, > 0.
func (c Config) Validate() error {
	errs := []error{
		c.Limiter.Validate(), c.Snapshots.Validate(), c.Rollout.Validate(), c.SnapshotAgent.Validate(), c.Replacement.Validate(),
		c.Clusters.Validate(), c.Dashboard.Validate(), c.Sharding.Validate(),
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("namespace must not be empty"))
	}
	if !slices.Contains(EtcdAccessModes, c.EtcdAccess) {
		errs = append(errs, fmt.Errorf("etcdAccess %q: want one of %s", c.EtcdAccess, strings.Join(EtcdAccessModes, ", ")))
	}
	if c.AgentImage == "" {
		errs = append(errs, errors.New("agentImage must not be empty"))
	}
	if c.Workers < 1 {
		errs = append(errs, errors.New("workers must be at least 1"))
	}
	if c.WorkersPerCluster < 1 || c.WorkersPerCluster > c.Workers {
		errs = append(errs, fmt.Errorf("workersPerCluster must be between 1 and workers (%d), got %d", c.Workers, c.WorkersPerCluster))
	}
	judged := errors.Join(errs...)
	for _, st := range Settings(&c) {
		d, ok := st.Get().(time.Duration)
		if ok && d <= 0 && (judged == nil || !strings.Contains(judged.Error(), st.Key)) {
			errs = append(errs, fmt.Errorf("%s must be > 0, got %s", st.Key, d))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid configuration: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return nil
}

// ReplacementPolicy is the replacement settings as the policy they
// configure (they are one and the same struct).
func (c Config) ReplacementPolicy() replacement.Policy { return c.Replacement }
