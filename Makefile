# The README's commands.
.PHONY: run test build

# Builds and runs the server on its defaults: 127.0.0.1:3306, data in
# ./lockstep-data, user root without a password. Server options go in
# ARGS: make run ARGS="--port 3307 --http-port 8081 --datadir ./data2"
ARGS ?=
run:
	go run ./cmd/lockstep serve $(ARGS)

# Runs every test: unit, data-driven and crash tests (under the race
# detector), then integration tests that start real servers on loopback
# (they use sysbench and the mariadb client when installed; .ci/run
# installs them). Both stages run even if the first fails, so one failure
# does not hide another; the target fails at the end if either did.
test:
	@failed=""; \
	echo "== unit tests (go test -race)"; \
	go test -count=1 -race -timeout 10m $$(go list ./... | grep -v /internal/integration) || failed="$$failed unit"; \
	echo "== integration tests"; \
	go test -count=1 -timeout 20m ./internal/integration/ || failed="$$failed integration"; \
	if [ -n "$$failed" ]; then echo "FAIL: make test: failed stage(s):$$failed"; exit 1; fi

build:
	go build -o lockstep ./cmd/lockstep
