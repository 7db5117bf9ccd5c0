#!/usr/bin/env bash
# Post-deploy smoke check: submit a small group-by job to a deployed app and wait for its aggregate.
#
#   infra/smoke.sh <resource-group> <app-name>
#
# Needs: az (logged in: az login), curl, node. Reads the app's host name and default function key with az, POSTs the
# job to /api/jobs, polls GET /api/jobs/{id} until it is completed, prints the aggregate and checks it against the
# expected one. Exit status: 0 passed, 1 failed (HTTP error, job failed, wrong aggregate, timeout), 2 usage.
#
# Environment (optional):
#   SMOKE_TIMEOUT_SECONDS  give up after this long (default 300: a cold start plus a few of the coordinator's 1-minute
#                          heartbeat ticks, the default COORDINATOR_SCHEDULE, should the submission's wake-up be lost)
#   SMOKE_POLL_SECONDS     wait between polls (default 5)
#
# The coordinator only runs where some app holds the lease, so with several apps the job may be coordinated by
# another region's app; any app of the deployment can answer the GET, because all state is in the shared account.
set -euo pipefail

usage() {
  echo "usage: $0 <resource-group> <app-name>" >&2
  exit 2
}

[[ $# -eq 2 ]] || usage
resource_group=$1
app_name=$2
timeout_seconds=${SMOKE_TIMEOUT_SECONDS:-300}
poll_seconds=${SMOKE_POLL_SECONDS:-5}

fail() {
  echo "smoke: FAILED: $*" >&2
  exit 1
}

for tool in az curl node; do
  command -v "$tool" >/dev/null 2>&1 || fail "'$tool' is not installed or not on PATH"
done

# json_get <json> <dotted.path>: prints the value at path (strings raw, anything else as JSON); empty if absent.
json_get() {
  node -e '
    const [text, path] = process.argv.slice(1);
    let value;
    try { value = JSON.parse(text); } catch { process.exit(3); }
    for (const key of path.split(".")) value = value == null ? undefined : value[key];
    if (value !== undefined) process.stdout.write(typeof value === "string" ? value : JSON.stringify(value));
  ' "$1" "$2"
}

# json_equal <json-a> <json-b>: succeeds when both parse to the same value, whatever the key order.
json_equal() {
  node -e '
    const canon = (v) => Array.isArray(v) ? v.map(canon)
      : v && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])])) : v;
    const [a, b] = process.argv.slice(1).map((t) => JSON.stringify(canon(JSON.parse(t))));
    process.exit(a === b ? 0 : 1);
  ' "$1" "$2"
}

host=$(az functionapp show --resource-group "$resource_group" --name "$app_name" --query defaultHostName --output tsv) ||
  fail "could not read the host name of app '$app_name' in resource group '$resource_group'"
[[ -n "$host" ]] || fail "app '$app_name' has no default host name"

# The host creates its default function key on first start, which can lag the publish by a little.
key=""
for _ in 1 2 3 4 5 6; do
  key=$(az functionapp keys list --resource-group "$resource_group" --name "$app_name" --query functionKeys.default --output tsv 2>/dev/null || true)
  [[ -n "$key" ]] && break
  sleep "$poll_seconds"
done
[[ -n "$key" ]] || fail "could not read the default function key of '$app_name' (is the app published and running?)"

base_url="https://${host}/api/jobs"
body_file=$(mktemp)
trap 'rm -f "$body_file"' EXIT

# request <method> <url> [json-body]: sets $status and $body. The key goes in a header, not in the URL.
request() {
  local args=(--silent --show-error --max-time 30 --output "$body_file" --write-out '%{http_code}'
    --request "$1" --header "x-functions-key: ${key}" --header 'accept: application/json')
  if [[ $# -ge 3 ]]; then
    args+=(--header 'content-type: application/json' --data "$3")
  fi
  status=$(curl "${args[@]}" "$2") || fail "$1 $2: curl failed"
  body=$(cat "$body_file")
}

job='{"kind":"group-by","params":{"format":"csv","keyField":"region","valueField":"amount"},"items":[{"inline":"region,amount\neu,3\nus,4\n"},{"inline":"region,amount\neu,5\n"}]}'
expected='{"eu":{"count":2,"sum":8,"min":3,"max":5},"us":{"count":1,"sum":4,"min":4,"max":4}}'

echo "smoke: submitting a group-by job to ${base_url}"
request POST "$base_url" "$job"
[[ "$status" == 202 ]] || fail "POST /api/jobs answered HTTP $status: $body"
job_id=$(json_get "$body" id) || fail "POST /api/jobs answered non-JSON: $body"
[[ "$job_id" =~ ^[A-Za-z0-9._~-]+$ ]] || fail "POST /api/jobs answered no usable job id: $body"
echo "smoke: job $job_id accepted; polling every ${poll_seconds}s for up to ${timeout_seconds}s"

deadline=$((SECONDS + timeout_seconds))
while :; do
  request GET "${base_url}/${job_id}"
  [[ "$status" == 200 ]] || fail "GET /api/jobs/$job_id answered HTTP $status: $body"
  job_status=$(json_get "$body" status) || fail "GET /api/jobs/$job_id answered non-JSON: $body"
  case "$job_status" in
    completed) break ;;
    running | pending | queued) echo "smoke: $job_status $(json_get "$body" progress)" ;;
    *) fail "job $job_id is '$job_status': $body" ;;
  esac
  ((SECONDS < deadline)) || fail "job $job_id not completed after ${timeout_seconds}s (last status '$job_status')"
  sleep "$poll_seconds"
done

aggregate=$(json_get "$body" aggregate)
echo "smoke: aggregate $aggregate"
json_equal "$aggregate" "$expected" || fail "aggregate differs from the expected $expected"
echo "smoke: PASSED"
