# The README's commands.
.PHONY: run test build

# Builds and runs the server on its defaults: 127.0.0.1:3306, data in
# ./lockstep-data, user root without a password.
run:
	go run ./cmd/lockstep serve

# Runs every test: unit, data-driven and crash tests (under the race
# detector), then integration tests that start real servers on loopback
# (they use sysbench and the mariadb client when installed; .ci/run
# installs them).
test:
	go test -count=1 -race -timeout 10m $$(go list ./... | grep -v /internal/integration)
	go test -count=1 -timeout 20m ./internal/integration/

build:
	go build -o lockstep ./cmd/lockstep
