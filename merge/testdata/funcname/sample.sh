#!/bin/bash
set -euo pipefail

log() {
    printf '%s\n' "$*" >&2
}

function cleanup {
    rm -rf "$tmp"
    log "cleaned"
}

function build() {
    local out=$1
    mkdir -p "$out"
    cp -r src "$out/"
    log "built $out"
}

check () (
    cd "$1"
    test -f Makefile
    make -q || true
)

main() {
    tmp=$(mktemp -d)
    trap cleanup EXIT
    build "$tmp/out"
    check "$tmp/out"
    log "done"
}

if [[ $# -gt 0 ]]; then
    log "arguments are ignored"
fi

main "$@"
