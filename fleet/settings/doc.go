// Package settings is the fleet manager's configuration: one struct,
// Config, loaded from a config file, ETCDFLEET_* environment variables and
// flags (in increasing precedence) through viper.
//
// Config is made of the parts' own config structs (limiter.Config,
// limiter.SlotsConfig, replacement.Policy, kubeconfigsecret.ClusterConfig,
// dashboard.Config) and the manager's own settings (sharding, metrics,
// leader election, workers, ...). Each part keeps its defaults and its
// Validate beside its struct; Default and Validate here only gather them.
//
// Every leaf field carries its config key (the mapstructure tag, nested
// under its section), its flag and its help text as struct tags. Settings
// walks the struct by reflection, so flags, environment variables, the
// config file, docs/configuration.md and the management chart's config
// block all derive from the fields:
//
//   - a new setting is a tagged field in its part's config struct, with its
//     default beside it; UPDATE_DOCS=1 go test ./fleet/settings/ then
//     regenerates docs/configuration.md;
//   - the chart renders .Values.config, whose keys are the config keys, as
//     the manager's config file; charts/ tests check that its values and
//     its schema have exactly the keys Settings lists.
package settings
