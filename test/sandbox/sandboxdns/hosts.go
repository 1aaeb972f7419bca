package sandboxdns

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Hosts owns one hosts file. It is safe for concurrent use.
type Hosts struct {
	path    string
	mu      sync.Mutex
	entries map[string][]string // key (e.g. ns/pod) -> [ip, names...]
}

// NewHosts creates (or truncates) the hosts file at path.
func NewHosts(path string) (*Hosts, error) {
	h := &Hosts{path: path, entries: map[string][]string{}}
	return h, h.flush()
}

// Path is the file to pass in $SANDBOX_HOSTS_FILE.
func (h *Hosts) Path() string { return h.path }

// Set maps names to ip under key, replacing what key had before.
func (h *Hosts) Set(key, ip string, names ...string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries[key] = append([]string{ip}, names...)
	return h.flush()
}

// Delete removes key's line.
func (h *Hosts) Delete(key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.entries, key)
	return h.flush()
}

// flush writes the whole file atomically. Caller holds mu (or owns h).
func (h *Hosts) flush() error {
	keys := make([]string, 0, len(h.entries))
	for k := range h.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s # %s\n", strings.Join(h.entries[k], " "), k)
	}
	tmp, err := os.CreateTemp(filepath.Dir(h.path), ".hosts-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), h.path)
}
