// Package proc starts the sandbox's child processes (kube-apiserver helpers,
// kube-controller-manager, etcd members) so that none outlives the test.
//
// # Implementation details
//
// Every child gets Pdeathsig=SIGKILL, so the kernel kills it if the test
// binary dies. Pdeathsig fires when the *thread* that forked the child exits,
// and Go may retire threads; so all forks happen on one goroutine locked to
// its OS thread for the life of the process. Each child also runs in its own
// process group so that Kill reaches anything it forked.
package proc
