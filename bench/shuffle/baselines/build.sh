#!/bin/sh
# Build the raw libfabric bandwidth baseline: sh build.sh [OUTPUT]
# (default ./fi_sendloop, relative to the current directory).
# Needs gcc and libfabric-dev.
set -e
out=${1:-./fi_sendloop}
exec gcc -O2 -Wall -o "$out" "$(dirname "$0")/fi_sendloop.c" -lfabric
