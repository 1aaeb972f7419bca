package settings

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Setting describes one configuration value: a tagged leaf field of Config.
type Setting struct {
	// Key is the config-file key (dotted for nested values), and the
	// chart's value under config.
	Key string
	// Flag is the command-line flag.
	Flag string
	// Help explains the setting; shown by --help and in the docs.
	Help string
	// field is the setting's field in the Config Settings was given.
	field reflect.Value
}

// Env is the environment variable for the setting: ETCDFLEET_ + the key
// in upper case with dots as underscores.
func (s Setting) Env() string {
	return "ETCDFLEET_" + strings.ToUpper(strings.ReplaceAll(s.Key, ".", "_"))
}

// Value renders the setting's value as text, durations as Go durations.
func (s Setting) Value() string {
	if d, ok := s.Get().(time.Duration); ok {
		return d.String()
	}
	return fmt.Sprint(s.Get())
}

// Get is the setting's value.
func (s Setting) Get() any { return s.field.Interface() }

// Settings lists every setting of c, in field order, each pointing at its
// field.
func Settings(c *Config) []Setting {
	var out []Setting
	walk(reflect.ValueOf(c).Elem(), "", &out)
	return out
}

// walk appends the settings of struct v, whose keys start with prefix.
// A field without a flag tag must be a section: a struct, named by its
// mapstructure tag or squashed into this level by ",squash". Anything
// else is a programming error, caught by the package's tests.
func walk(v reflect.Value, prefix string, out *[]Setting) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if flag := f.Tag.Get("flag"); flag != "" {
			*out = append(*out, Setting{Key: prefix + name, Flag: flag, Help: f.Tag.Get("help"), field: v.Field(i)})
			continue
		}
		if f.Type.Kind() != reflect.Struct || (name == "" && opts != "squash") {
			panic(fmt.Sprintf("settings: field %s.%s has no flag tag and is not a section", t, f.Name))
		}
		sub := prefix
		if opts != "squash" {
			sub = prefix + name + "."
		}
		walk(v.Field(i), sub, out)
	}
}
