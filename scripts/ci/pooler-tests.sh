#!/usr/bin/env bash
# CI step: the service behind PgBouncer in transaction mode (docs/operations.md, "Running on several
# machines"). Starts PgBouncer (scripts/ci/pgbouncer.sh) in front of the CI PostgreSQL, which must be
# running (scripts/ci/postgres.sh), then runs through it:
#   - the tests that run several processes on one database (LISTEN/NOTIFY between processes, the job
#     worker, crashes), with TEST_DATABASE_POOLER_URL: services connect through the pooler with
#     DATABASE_POOLER=transaction and their LISTEN on DATABASE_LISTEN_URL, directly;
#   - the conformance suite against a real server configured the same way.
# Prints the pooler's transaction count for the tests' databases (proof the traffic went through it)
# and stops PgBouncer at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."

export PGPORT=${PGPORT:-55432}
export PGBOUNCER_PORT=${PGBOUNCER_PORT:-26432}
direct="postgres://postgres@127.0.0.1:$PGPORT"
pooled="postgres://postgres@127.0.0.1:$PGBOUNCER_PORT"

t0=$(date +%s)
bash scripts/ci/pgbouncer.sh start </dev/null
trap 'bash scripts/ci/pgbouncer.sh stop || true' EXIT

psql_direct() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$direct/postgres" -c "$1"; }

# The tests that run several API and worker processes on one database.
cluster_tests=(
  test/foundation/cluster.e2e.test.ts
  test/foundation/credential-cache.e2e.test.ts
  test/conversations/process-pair.e2e.test.ts
  test/rooms/events-processes.e2e.test.ts
  test/resilience/worker-kill.e2e.test.ts
  test/webhooks/crash.e2e.test.ts
  test/integrations/takeover.e2e.test.ts
  test/scale/pooler.e2e.test.ts
)

status=0
report=$(mktemp)
echo "pooler: cluster tests through PgBouncer (transaction mode)"
TEST_DATABASE_URL="$direct/postgres" TEST_DATABASE_POOLER_URL="$pooled/postgres" \
  npx vitest run --project e2e --reporter=default --reporter=json --outputFile.json="$report" "${cluster_tests[@]}" || status=1
# One "pooler: N passed, N failed, N skipped" line, as .ci/run prints for its own runs.
node -e '
  const fs = require("fs");
  try {
    const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    console.log(`pooler: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
  } catch { console.log("pooler: no report written"); process.exit(1); }
' "$report" || status=1
rm -f "$report"

echo "pooler: conformance (real server through PgBouncer)"
db="persona_pooler_conformance_$$"
psql_direct "DROP DATABASE IF EXISTS $db WITH (FORCE)"
psql_direct "CREATE DATABASE $db"
DATABASE_URL="$pooled/$db" DATABASE_LISTEN_URL="$direct/$db" DATABASE_POOLER=transaction \
  bash scripts/ci/conformance.sh --target=real </dev/null || status=1

# The pooler's own count of the transactions it carried for the conformance database.
xacts=$(psql -X -A -t -d "$pooled/pgbouncer" -c "SHOW STATS" | awk -F'|' -v db="$db" '$1 == db { print $2 }')
echo "pooler: PgBouncer carried ${xacts:-0} transactions for the conformance server"
[ "${xacts:-0}" -gt 0 ] || { echo "pooler: the conformance server did not go through PgBouncer"; status=1; }
psql_direct "DROP DATABASE IF EXISTS $db WITH (FORCE)"

echo "pooler: took $(($(date +%s) - t0))s"
exit $status
