# The README's commands.
.PHONY: run test build

# Builds and runs the server on its defaults: 127.0.0.1:3306, data in
# ./lockstep-data, user root without a password.
run:
	go run ./cmd/lockstep serve

# Runs every test: unit, data-driven and crash tests, and integration tests
# that start real servers on loopback (they use sysbench and the mariadb
# client when installed; .ci/run installs them).
test:
	go test -count=1 -timeout 20m ./...

build:
	go build -o lockstep ./cmd/lockstep
