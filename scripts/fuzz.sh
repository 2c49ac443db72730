#!/usr/bin/env bash
# Runs every Fuzz* target in the module for the given time each (default 60s).
set -euo pipefail
t=${1:-60s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $f ($t)"
    go test -run XXX -fuzz "^$f\$" -fuzztime "$t" "$pkg"
  done
done
