package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLiteKnobsBinary: with Go environment knobs the apiserver is started
// through a script that sets them and passes every argument on; without,
// it is the binary itself.
func TestLiteKnobsBinary(t *testing.T) {
	// A stand-in apiserver that prints what it was given.
	fake := filepath.Join(t.TempDir(), "kube-apiserver")
	script := "#!/bin/sh\necho \"GOGC=$GOGC GOMEMLIMIT=$GOMEMLIMIT GOMAXPROCS=$GOMAXPROCS nice=$(nice)\"\nfor a in \"$@\"; do echo \"[$a]\"; done\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := (LiteKnobs{}).binary(fake); err != nil || p != fake {
		t.Fatalf("no Go knobs: %q, %v; want %q itself", p, err, fake)
	}
	p, err := LiteKnobs{GOGC: "50", GOMEMLIMIT: "100MiB", GOMAXPROCS: "1", Nice: 5}.binary(fake)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(filepath.Dir(p))
	out, err := exec.Command(p, "--a=1", "two words").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	base, err := exec.Command("nice").Output() // this test's own niceness
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(base)))
	if want := fmt.Sprintf("GOGC=50 GOMEMLIMIT=100MiB GOMAXPROCS=1 nice=%d\n[--a=1]\n[two words]\n", min(19, n+5)); string(out) != want {
		t.Errorf("the script ran the apiserver with:\n%s\nwant:\n%s", out, want)
	}
}

// TestLiteKnobSteps: each step keeps the ones before (they are measured
// cumulatively), and the default is the last.
func TestLiteKnobSteps(t *testing.T) {
	steps := LiteKnobSteps()
	for i := 1; i < len(steps); i++ {
		for f, v := range steps[i-1].Knobs.Flags {
			if steps[i].Knobs.Flags[f] != v {
				t.Errorf("step %q drops --%s=%s of %q", steps[i].Name, f, v, steps[i-1].Name)
			}
		}
	}
	if d, last := DefaultLiteKnobs(), steps[len(steps)-1].Knobs; d.GOGC != last.GOGC || len(d.Flags) != len(last.Flags) {
		t.Errorf("DefaultLiteKnobs %+v is not the last step %+v", d, last)
	}
}
