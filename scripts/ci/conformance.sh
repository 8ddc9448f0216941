#!/usr/bin/env bash
# CI step: the conformance suite against the real server (embedded, in-memory), the Prism mock and
# `prism proxy --errors` in front of the real server. conformance/run.ts starts and stops them all
# on loopback and prints one "conformance (<target>): N of M operations exercised" line per target.
set -euo pipefail
cd "$(dirname "$0")/../.."
unset BASE_URL DIRECT_URL MAILBOX_DIR
exec npm run -s conformance -- "$@"
