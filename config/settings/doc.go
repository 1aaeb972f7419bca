// Package settings is the manager's configuration: one struct whose defaults
// live in Default, loaded from a config file, ETCDFLEET_* environment
// variables and flags (in increasing precedence) through viper.
//
// Every setting is declared once, in settings(): its config key, flag,
// help text and the field it fills. Flags, environment variables, the
// config file and docs/configuration.md all derive from that list, and a
// test checks the doc is complete.
package settings
