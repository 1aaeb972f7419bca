package fleet_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestLeaksIn checks, without a sandbox, the credential search of the spec
// "never shows a credential in any Event, status, log line or metric label, through a rotation, a heal and bad Secrets":
// any piece of 35 characters or more (needleLen + needleLen/2 - 1) of a
// token, of a key line or of a base64-logged key is found anywhere in a
// log; a log without them is clean.
func TestLeaksIn(t *testing.T) {
	gomega.RegisterTestingT(t)
	const token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJlLWJ5dGVzLW9mLXRoZS10b2tlbg"
	key := "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBb3xk1mZ2V5LWJ5dGVzLW9mLWEtY2xpZW50LWtleS10aGF0LW11c3Qtbm90\n-----END EC PRIVATE KEY-----\n"
	kc := clientcmdapi.NewConfig()
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientKeyData: []byte(key)}
	kc.AuthInfos["t"] = &clientcmdapi.AuthInfo{Token: token}
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	needles := credentialNeedles([][]byte{raw})
	clean := strings.Repeat(`{"level":"info","msg":"Cluster engaged","cluster":"w1"}`+"\n", 1000)
	if got := leaksIn(clean, needles); len(got) != 0 {
		t.Errorf("clean log: %v", got)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(key))
	for name, leak := range map[string]string{
		"token middle":                      token[40:76],
		"key line":                          "MHcCAQEEIBb3xk1mZ2V5LWJ5dGVzLW9m",
		"base64 key chunk":                  b64[30:66],
		"whole kubeconfig logged as []byte": base64.StdEncoding.EncodeToString(raw),
		"shifted kubeconfig":                base64.StdEncoding.EncodeToString(append([]byte("ab"), raw...)),
		"key-only kubeconfig as []byte":     base64.StdEncoding.EncodeToString(keyOnly(t, key)),
	} {
		if got := leaksIn(clean+`{"msg":"oops `+leak+`"}`+clean, needles); len(got) == 0 {
			t.Errorf("%s not found", name)
		}
	}
}

// keyOnly is a kubeconfig whose one credential is a client key, which the
// file holds base64-encoded.
func keyOnly(t *testing.T, key string) []byte {
	kc := clientcmdapi.NewConfig()
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientKeyData: []byte(key)}
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
