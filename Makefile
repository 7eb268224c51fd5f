# sessiond — build, run and test entry points. `make test` is what CI runs.
GO       ?= go
BIN      := bin/sessiond
PKGS     := ./...
# Packages whose tests exercise concurrency; run under the race detector
# as part of `make test`, in one run with -short (so that packages fill
# both cores to its end), the session engine, the changesets (whose
# concurrent accepts moved there from session) and the view directories
# among them. -short skips what the plain run
# already did and what has no goroutines of the daemon's own to race;
# each skip says so (plainRunOnly): commands in namespaces (exec, checks,
# the run and service tools, environment builds with npm and the go
# command, the escape and limit tables, the second run of workdir's suite
# as an unprivileged user), git in the view, the git CLI fidelity tables
# and one-goroutine random properties (trees, revisions, indexes,
# alternates, case checks, .gitmodules, push into a checkout), the tables
# of routes, tools and schemas, child processes writing alone (gitstore's
# kill loop, the stores' crash test), and every command line test that
# only drives the daemon's real binary, built without the detector. Long
# runs go shorter: the crash test kills 20 times instead of 200, the
# cancelled batch has 2,000 files instead of 20,000, random property runs
# of concurrent code do a tenth of their checks. What races stays:
# concurrent writers, readers and housekeeping of one repository,
# concurrent accepts, group commit and its crashes, the stores'
# conformance suite and LISTEN/NOTIFY, event fan-out, live session locks
# and unloads, a busy session's reads during a command, output streamed
# under a cap, concurrent first commands, cache trims, a timeout's kill,
# egress, the cluster's session owners, a service's lifecycle (restarts,
# idle stops, captures) and exposed ports, a service sharing its view with
# commands and the daemon's edits, mcp's progress and cancel and its HTTP
# sessions, and on the command line the client's event stream and
# concurrent writers and the CLI's parallel checkout.
RACE_PKGS := ./session/ ./changeset/ ./workdir/ ./gitstore/... ./overlay/ ./db/ ./graph/ ./api/ ./events/ ./repos/ ./worktree/ ./mcpserver/ ./cmd/sessiond/ ./internal/groupcommit/ ./egress/ ./cluster/ ./environment/
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 30s
BENCHCOUNT ?= 5

.PHONY: build run test test-race test-elsewhere bench fuzz lint tidy-check clean crash cluster-crash

build:
	$(GO) build -o $(BIN) ./cmd/sessiond

# Serves the sample repository (built from testdata/repos/small.fi into
# .cache/run once) on the embedded store; Ctrl-C stops it.
run: build
	$(BIN) quickstart --data-dir .cache/run

# The checks come first: go.mod and go.sum must be what `go mod tidy`
# writes, and the tree must pass make lint (gofmt, vet, staticcheck).
# The plain run starts its two longest packages first (go test starts
# packages in the order named), so that neither runs alone at its end:
# 330 s instead of 360 s on 2 cores.
test: tidy-check lint
	$(GO) test -count=1 -timeout 20m ./workdir/ ./session/ $(PKGS)
	$(GO) test -count=1 -race -short -timeout 20m $(RACE_PKGS)

test-race:
	$(GO) test -count=1 -race -timeout 30m $(PKGS)

# Nothing in the suite may depend on where the repository is cloned (CI
# clones to one place, users to another; commands on a view get a private
# /tmp). This clones HEAD below ELSEWHERE (a directory of its own there)
# and runs the packages whose tests reach outside their own directory.
ELSEWHERE ?= /var/tmp
test-elsewhere:
	dir=$$(mktemp -d $(ELSEWHERE)/sessiond-elsewhere-XXXXXX) && \
	  git clone -q . $$dir/sessiond && \
	  (cd $$dir/sessiond && $(GO) test -count=1 -timeout 20m ./workdir/ ./mcpserver/ ./cmd/sessiond/); \
	  status=$$?; rm -rf $$dir; exit $$status

# Benchmarks side by side with the git CLI on a generated 100,000-file
# repository (built once, cached under .cache/). Results: BENCHMARKS.md.
# The session churn benchmark (CHURN_SESSIONS sessions created and
# finished, resident memory at each quarter) runs once, after the others.
CHURN_SESSIONS ?= 100000
bench:
	$(GO) test -p 1 -run '^$$' -bench . -skip '^BenchmarkSessionChurn$$' -benchmem -count $(BENCHCOUNT) -timeout 60m ./gitstore/ ./db/ ./overlay/ ./session/ ./merge/ ./graph/ ./workdir/ ./worktree/ ./mcpserver/ ./cmd/sessiond/ | tee bench.out
	SESSIOND_CHURN_SESSIONS=$(CHURN_SESSIONS) $(GO) test -run '^$$' -bench '^BenchmarkSessionChurn$$' -benchtime 1x -count 1 -timeout 120m ./session/ | tee -a bench.out

# The long kill -9 test: CRASH_ROUNDS kills of the daemon per store (SQLite
# and Postgres at once) under CPU load (CRASH_LOAD spinning goroutines),
# then every acknowledged write is read back. Prints per store:
# acknowledged, lost, unreadable. Not part of `make test`.
CRASH_ROUNDS ?= 500
CRASH_LOAD ?= 2
crash:
	SESSIOND_CRASH_ROUNDS=$(CRASH_ROUNDS) SESSIOND_CRASH_LOAD=$(CRASH_LOAD) $(GO) test -count=1 -run '^TestCrash$$' -v -timeout 120m ./cmd/sessiond/ > crash.out 2>&1; \
	  status=$$?; grep -E '^(crash:|--- FAIL|FAIL|ok|panic)' crash.out; exit $$status

# The cluster's kill -9 test: three nodes on one PostgreSQL, 16 writers on
# sessions spread over them; CLUSTER_ROUNDS rounds each kill a random node
# under load, read every acknowledged write back through the survivors
# (which take the dead node's sessions over) and start the node again.
# Prints acknowledged, lost, unreadable and half-applied. Not part of
# `make test`.
CLUSTER_ROUNDS ?= 50
cluster-crash:
	CLUSTER_ROUNDS=$(CLUSTER_ROUNDS) $(GO) test -count=1 -run '^TestClusterCrash$$' -v -timeout 120m ./internal/testcluster/ > cluster-crash.out 2>&1; \
	  status=$$?; grep -E '^(cluster-crash:|--- FAIL|FAIL|ok|panic)' cluster-crash.out; exit $$status

# Each fuzz target in turn, FUZZTIME each: the path validator, the
# .gitmodules parser and rules, the three-way line merge, a partial
# accept's selection, a diff driver's funcname pattern as RE2, the glob
# matcher, the size parser of flags,
# edit_file's matcher and the MCP diff tool's split of a diff into files.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzValidatePath -fuzztime $(FUZZTIME) ./overlay/
	$(GO) test -run '^$$' -fuzz FuzzCheckContent -fuzztime $(FUZZTIME) ./overlay/
	$(GO) test -run '^$$' -fuzz FuzzMergeLines -fuzztime $(FUZZTIME) ./merge/
	$(GO) test -run '^$$' -fuzz FuzzSelect -fuzztime $(FUZZTIME) ./merge/
	$(GO) test -run '^$$' -fuzz FuzzFuncnamePattern -fuzztime $(FUZZTIME) ./merge/
	$(GO) test -run '^$$' -fuzz FuzzGlob -fuzztime $(FUZZTIME) ./session/
	$(GO) test -run '^$$' -fuzz FuzzParseByteSize -fuzztime $(FUZZTIME) ./cmd/sessiond/
	$(GO) test -run '^$$' -fuzz FuzzApplyEdits -fuzztime $(FUZZTIME) ./mcpserver/
	$(GO) test -run '^$$' -fuzz FuzzDiff -fuzztime $(FUZZTIME) ./mcpserver/

tidy-check:
	$(GO) mod tidy -diff

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)

clean:
	rm -rf bin bench.out crash.out cluster-crash.out
