// Command etcd is the sandbox's etcd: stock etcdmain with the sandbox resolver
// installed first, so members resolve Kubernetes DNS names from the sandbox
// hosts file. test/tools/assets.sh builds it; the directory name starts with
// "_" so the project module does not try to compile it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"

	"etcd-build.local/sandboxdns"
)

func main() {
	sandboxdns.InstallFromEnv()
	etcdmain.Main(os.Args)
}
