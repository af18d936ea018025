# Tether's front door. `make run` shows a graph run end to end on a local
# Temporal dev server; `make test` is what CI runs.
SHELL := bash
GO ?= go
export GOFLAGS ?= -buildvcs=false

.PHONY: all build upgrade-probe tools run console screenshots test test-loaded mutate lint fuzz bench bench-visit histories cluster cluster-down soak soak-short clean

all: build tools

# VERSION and COMMIT are stamped into both binaries (tether version,
# tether-worker --version); a release sets VERSION. A versioned worker's
# default build id in its Temporal worker deployment is made of them
# (internal/version.BuildID).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS = -X github.com/tether-run/tether/internal/version.Version=$(VERSION) -X github.com/tether-run/tether/internal/version.Commit=$(COMMIT)

## build: the tether CLI, the tether-worker binary and its confine helper, into bin/, with VERSION and COMMIT stamped
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/tether ./starter
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/tether-worker ./worker
	$(GO) build -o bin/tether-confine ./internal/sandbox/cmd/tether-confine
	$(GO) build -o bin/tether-ask-user ./internal/askuser/cmd/tether-ask-user

## upgrade-probe: bin/upgrade/tether-worker, this source with a test-only change of workflow code (one more activity before every visit), for the soak's rolling upgrade
upgrade-probe:
	$(GO) build -tags tether_upgrade_probe -ldflags "$(LDFLAGS)" -o bin/upgrade/tether-worker ./worker
	$(GO) build -o bin/upgrade/tether-confine ./internal/sandbox/cmd/tether-confine

## tools: the Temporal CLI and versitygw (built once, cached by version), the agent CLIs, bubblewrap, chromium
tools:
	bash scripts/tools.sh temporal versitygw clis sandbox chromium >/dev/null

## run: dev server + worker + the review-loop demo, answered automatically
run: build
	bash scripts/tools.sh temporal >/dev/null
	bash scripts/demo.sh examples/review-loop.yaml

## console: the web console on 127.0.0.1:8080, for the Temporal server and store the environment names
console: build
	bin/tether console

## screenshots: docs/console/*.png, taken by the console's browser tests
screenshots: build
	TETHER_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -p 1 -timeout 60m ./internal/e2e -run 'TestConsole|TestOneClickAnswers|TestResumeWithACorrectedGraph'

## test: every test, against the real dev server, versitygw and agent CLIs
test: build tools
	$(GO) test -count=1 -p 2 -timeout 80m ./...
	$(GO) test -count=1 -race -timeout 20m $(RACE_PACKAGES)

# RACE_PACKAGES run again under the race detector: the workflow and what
# shares memory with it in one process (local activities are given their
# arguments, not copies), and the console's and notices' servers.
RACE_PACKAGES = ./workflows/ ./activities/ ./internal/runstore/ ./internal/console/ ./internal/notify/

## test-loaded: every test again, with a busy loop on every core (no test may need a quiet machine)
test-loaded: build tools
	bash scripts/loaded.sh $(GO) test -count=1 -p 2 -timeout 90m ./...

## mutate: mutation testing of the trust boundary (docs/testing.md); MUTATE_CHANGED=REF only what changed
mutate:
	bash scripts/mutate.sh $(MUTATE_TARGETS)

## cluster: the production topology on this machine (PostgreSQL, Temporal server, S3, 3 workers)
cluster: build
	bash scripts/cluster.sh up --workers $${WORKERS:-3}

cluster-down:
	bash scripts/cluster.sh down

## soak: 200 runs under worker kills, Temporal, PostgreSQL and S3 outages and a rolling upgrade, against `make cluster`
soak: build upgrade-probe
	eval "$$(bash scripts/cluster.sh env)" && $(GO) run ./internal/soak/cmd/soak -workers $${WORKERS:-3} -upgrade-bin bin/upgrade/tether-worker $(SOAK_FLAGS)

## soak-short: CI's soak (20 runs, one worker kill, one S3 stop, a rolling upgrade to bin/upgrade/tether-worker)
soak-short: build upgrade-probe
	eval "$$(bash scripts/cluster.sh env)" && $(GO) run ./internal/soak/cmd/soak -short -workers $${WORKERS:-3} -upgrade-bin bin/upgrade/tether-worker $(SOAK_FLAGS)

## lint: go vet, staticcheck and workflowcheck
lint:
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) tool workflowcheck ./workflows/...

## fuzz: each fuzz target for 60 seconds
fuzz:
	bash scripts/fuzz.sh 60s

## bench: the benchmarks reported in docs/
bench: tools build
	$(GO) test -run '^$$' -bench . -benchtime 3x -timeout 60m $$($(GO) list ./... | grep -v /e2e)
	$(GO) test -run '^$$' -bench 'Visit$$' -benchtime 200x -count 3 -timeout 20m ./internal/e2e
	$(GO) test -run '^$$' -bench LongPersistLoop -benchtime 10000x -count 1 -timeout 60m ./internal/e2e
	$(GO) test -run '^$$' -bench Console -benchtime 3x -count 1 -timeout 60m ./internal/e2e
	$(GO) run ./internal/visitbench/cmd/visitbench

## bench-visit: one visit against the bare agent CLI, split into its parts; BEFORE=DIR (a checkout with bin/ built) runs beside it, VISITBENCH_FLAGS='-server cluster' on make cluster
bench-visit: tools build
	$(GO) run ./internal/visitbench/cmd/visitbench $(VISITBENCH_FLAGS) . $(BEFORE)

## histories: re-record the replay histories from real runs (new files only)
histories: build tools
	TETHER_RECORD_HISTORIES=1 $(GO) test -count 1 -timeout 20m ./internal/e2e \
		-run 'TestReviewLoopDemo|TestPersistAcrossWorkers$$/scripted|TestAskUserAcrossWorkers/scripted|TestFailStopThenResume|TestToolAfterAgent|TestWorkspaceTravelsWithTheRun/fs|TestWorkspaceFromARepository|TestBudgetStopAndResume|TestNodeBudgetStopAndResume|TestVisitOutlivesLostWorkers|TestWorkerKilledMidVisit/killed|TestBranchWorkspaces|TestBranchVisitsWaitForAnUpgradedWorker|TestBranchLoopsCountTheirVisits|TestRunInputSessionIDIsNotADelivery|TestRunIDNamesOneRun|TestFollowAndStatusShowEachVisitsResult|TestCanceledRunLeavesTheWaitingQuery|TestIssueToPullRequest|TestGitHubCommands|TestResumeWithACorrectedGraph|TestACancelIsNoVisit|TestRollingUpgradeMovesRunsAtTheirSafePoints|TestNewRunTakesTheBaselineAtOnce|TestStrandedRunsReplayOnTheCurrentBuild'

clean:
	rm -rf bin .tether
