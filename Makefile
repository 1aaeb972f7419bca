# etcdfleet Makefile. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

K8S_VERSION            ?= v1.36.3
ETCD_VERSION           ?= v3.7.3
# The sandbox also runs the previous minor, so version rolls are real.
ETCD_PREVIOUS_VERSION  ?= v3.6.16
HELM_VERSION           ?= v3.22.0
CONTROLLER_GEN_VERSION ?= v0.21.0
# Tools and control-plane binaries live outside the repo so a fresh clone
# (CI) on the same machine reuses them.
CACHE_DIR      ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)
TOOLS_DIR      ?= $(CACHE_DIR)/etcdfleet-tools
CONTROLLER_GEN := $(TOOLS_DIR)/controller-gen-$(CONTROLLER_GEN_VERSION)/controller-gen
HELM           := $(TOOLS_DIR)/helm-$(HELM_VERSION)/helm
ASSETS_ENV      = K8S_VERSION=$(K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) ETCD_PREVIOUS_VERSION=$(ETCD_PREVIOUS_VERSION)
# Concurrent control-plane starts on 2 cores are CPU-bound: allow 90 s.
TEST_ENV        = KUBEBUILDER_ASSETS="$$($(ASSETS_ENV) test/tools/assets.sh)" \
                  KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=90s HELM=$(HELM) \
                  SEAWEEDFS_BINARY="$$(test/tools/seaweedfs.sh)"
GO_TEST_FLAGS  ?= -count=1 -timeout 40m
# CI shows the end of make test's output, where Ginkgo names a failed spec
# but not why: the test target repeats each e2eutil.PrintFailures block
# (its first FAILURE_LINES lines) last.
FAILURE_LINES  ?= 12
export GOFLAGS ?= -buildvcs=false

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the binaries into bin/ (CGO_ENABLED=0, -trimpath, as the Dockerfile does).
	CGO_ENABLED=0 go build -trimpath -o bin/ ./cmd/...

.PHONY: envtest-assets
envtest-assets: ## Build or reuse kube-apiserver, kube-controller-manager, kubectl and etcd (cold ~6 min, cached after).
	@start=$$(date +%s); $(ASSETS_ENV) test/tools/assets.sh >/dev/null; \
	  echo "envtest-assets: $$(( $$(date +%s) - start ))s"

.PHONY: seaweedfs
seaweedfs: ## Build or reuse SeaweedFS's weed, the sandbox's S3 server (cold: 15-45 min on 2 cores, cached after).
	@start=$$(date +%s); test/tools/seaweedfs.sh >/dev/null; \
	  echo "seaweedfs: $$(( $$(date +%s) - start ))s"

$(CONTROLLER_GEN):
	GOBIN=$(dir $@) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for the API types (controller-gen).
	$(CONTROLLER_GEN) object paths=./memberctl/api/... paths=./fleet/api/...

# What `make manifests` writes, and `make verify-generated` compares with
# the commit: the workload RBAC rules come from
# memberctl/workload/permissions.go and the admission policy's etcd images
# from memberctl/api/v1alpha1/versions.go (config/rbac/gen), the charts'
# crds/ are copies of config/crd (helm installs crds/ itself, before the
# templates).
GENERATED := config/crd charts/etcdfleet/crds charts/etcdfleet-workload/crds \
             config/rbac/workload/cluster_role.yaml config/rbac/workload/admission_policy.yaml \
             charts/etcdfleet-workload/templates/_rules.tpl \
             charts/etcdfleet-workload/templates/admissionpolicy.yaml memberctl/api fleet/api

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs into config/crd and the charts' crds/, the workload RBAC from memberctl/workload/permissions.go, the admission policy's etcd images from the supported versions, and the chart's admission policies from config's.
	$(CONTROLLER_GEN) crd paths=./memberctl/api/... output:crd:artifacts:config=config/crd/workload
	$(CONTROLLER_GEN) crd paths=./fleet/api/... output:crd:artifacts:config=config/crd/management
	rm -f charts/etcdfleet/crds/*.yaml charts/etcdfleet-workload/crds/*.yaml
	cp config/crd/management/*.yaml charts/etcdfleet/crds/
	cp config/crd/workload/*.yaml charts/etcdfleet-workload/crds/
	go run ./config/rbac/gen

.PHONY: verify-generated
verify-generated: generate manifests ## Fail if generated code, CRDs (config/crd, charts' crds/) or workload RBAC drifted from their sources.
	@git diff --exit-code -- $(GENERATED) && untracked=$$(git ls-files --others --exclude-standard -- $(GENERATED)) && \
	  { [ -z "$$untracked" ] || { echo "not committed: $$untracked"; false; }; } || \
	  { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }

.PHONY: lint
lint: ## gofmt and go vet.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...

.PHONY: test
test: lint verify-generated $(HELM) ## Build or reuse the binaries, then run every unit and e2e test against real apiservers and etcd (fuzz seed corpora included; fuzzing is make fuzz).
	@start=$$(date +%s); $(ASSETS_ENV) test/tools/assets.sh >/dev/null; \
	  echo "binaries: $$(( $$(date +%s) - start ))s"
	@start=$$(date +%s); test/tools/seaweedfs.sh >/dev/null; \
	  echo "seaweedfs: $$(( $$(date +%s) - start ))s"
	@start=$$(date +%s); log=$$(mktemp); rc=0; \
	  $(TEST_ENV) test/tools/gotest-lanes.sh $(GO_TEST_FLAGS) 2>&1 | tee $$log || rc=$$?; \
	  echo "tests: $$(( $$(date +%s) - start ))s"; \
	  if [ $$rc -ne 0 ]; then echo "--- why the failed specs failed (e2eutil.PrintFailures; full output above) ---"; \
	    grep -A$(FAILURE_LINES) '^FAILED: ' $$log | cut -c1-240 || true; fi; \
	  rm -f $$log; exit $$rc

# Native Go fuzz targets, as package:Function. Their seed corpora (f.Add
# and testdata/fuzz) run as plain tests with every go test, make test's
# included; fuzzing itself is `make fuzz` alone, not part of make test:
# -fuzz rebuilds every target instrumented (405 s cold on 2 cores).
FUZZ_TARGETS ?= ./providers/kubeconfigsecret:FuzzParseKubeconfig ./memberctl/component/pod:FuzzBuild ./memberctl/replacement:FuzzPolicy ./memberctl/schedule:FuzzParseCron ./memberctl/etcdaccess:FuzzWSConnRead ./memberctl/etcdaccess:FuzzStreamConnErrors ./memberctl/snapshot/agent:FuzzParseResult ./memberctl/datadirguard:FuzzDataDirLost ./providers/kubeconfigsecret:FuzzJWTLifetime ./memberctl/upgrade:FuzzCheck ./memberctl/etcdaccess:FuzzSPDYPortForward
FUZZTIME     ?= 10s

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 10s); make test runs only their seed corpora.
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  go test -count=1 -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; done

.PHONY: test-e2e
test-e2e: ## Run only the sandbox e2e suites under test/.
	$(TEST_ENV) go test $(GO_TEST_FLAGS) ./test/...

.PHONY: test-e2e-shard
test-e2e-shard: ## Run the sharding e2e: 3 manager replicas with --shard over 6 workload clusters (its own sandbox), then three more with the apiservers' audit proof of the fences and duplicate registrations across replicas.
	$(TEST_ENV) go test -count=1 -timeout 25m ./test/e2e/fleet/ -ginkgo.label-filter=shard

.PHONY: demo
demo: ## Run the main job on a local fleet: register clusters, reboot every node, watch them heal, back them up to S3 (DEMO_ARGS=--keep leaves it up).
	@$(ASSETS_ENV) test/tools/assets.sh >/dev/null
	$(TEST_ENV) go run ./test/demo $(DEMO_ARGS)

.PHONY: sandbox
sandbox: ## Start a local management cluster and workload clusters and print their kubeconfigs (Ctrl-C stops them).
	@$(ASSETS_ENV) test/tools/assets.sh >/dev/null
	$(TEST_ENV) go run ./test/demo --sandbox-only --clusters 1

.PHONY: bench-scale
bench-scale: ## Register BENCH_SCALE_CLUSTERS (default 100) lite clusters with 1 and 3 replicas: time to Connected, memory, goroutines and API requests per cluster.
	$(TEST_ENV) go test -count=1 -timeout 60m -run '^$$' -bench BenchmarkScale -benchtime 1x ./test/bench/scale/

.PHONY: bench
# One benchmark package at a time (-p 1): each times the product on the
# machine, and go test's default ran two at once, so the sharded fleet heal
# ran beside the memory bench's 10,000 Pod creates at a load of 16-27.
bench: ## Run the benchmarks, one package at a time, and print their figures (replacement latency, fleet heal time, memory, scale).
	$(TEST_ENV) BENCH_TIMELINE=$(CURDIR)/heal-timeline-bench.svg go test -p 1 -count=1 -timeout 60m -run '^$$' -bench . -benchtime 1x ./test/bench/... ./fleet/limiter/...

$(HELM):
	GOBIN=$(dir $@) go install -trimpath \
	  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION)" \
	  helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

.PHONY: helm
helm: $(HELM) ## Install the helm CLI (built from the Go module proxy).
