# The two commands of the README.
.PHONY: test build

# Runs every test (unit, data-driven, crash tests through the in-memory
# crash filesystem).
test:
	go test -count=1 ./...

build:
	go build ./...
