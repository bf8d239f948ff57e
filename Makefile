# The README's commands.
.PHONY: run test build cdeps

# The server links ICU (its regular expressions) through cgo: it needs a
# C++ compiler and ICU's headers, which a fresh Debian machine with Go may
# lack. As root they are installed; otherwise the command is printed.
cdeps:
	@if ! command -v g++ >/dev/null || [ ! -e /usr/include/unicode/regex.h ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "== installing g++ and libicu-dev (the server links ICU)"; \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ libicu-dev >/dev/null || \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ libicu-dev >/dev/null; }; \
		else \
			echo "Lockstep links ICU: run 'sudo apt-get install g++ libicu-dev' first"; exit 1; \
		fi; \
	fi

# Builds and runs the server on its defaults: 127.0.0.1:3306, data in
# ./lockstep-data, user root without a password. Server options go in
# ARGS: make run ARGS="--port 3307 --http-port 8081 --datadir ./data2"
ARGS ?=
run: cdeps
	go run ./cmd/lockstep serve $(ARGS)

# Runs every test: unit, data-driven and crash tests (under the race
# detector), then integration tests that start real servers on loopback
# (they use sysbench and the mariadb client when installed; .ci/run
# installs them). Both stages run even if the first fails, so one failure
# does not hide another; the target fails at the end if either did.
test: cdeps
	@failed=""; \
	echo "== unit tests (go test -race)"; \
	go test -count=1 -race -timeout 10m $$(go list ./... | grep -v /internal/integration) || failed="$$failed unit"; \
	echo "== integration tests"; \
	go test -count=1 -timeout 20m ./internal/integration/ || failed="$$failed integration"; \
	if [ -n "$$failed" ]; then echo "FAIL: make test: failed stage(s):$$failed"; exit 1; fi

build: cdeps
	go build -o lockstep ./cmd/lockstep
