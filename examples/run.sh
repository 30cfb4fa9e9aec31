#!/usr/bin/env bash
# Sends one example query to a running itemgraph and prints the response, with the
# DynamoDB trace (`x-itemgraph-trace: 1`) in `extensions.dynamodb`.
#
#   examples/run.sh FILE.graphql [URL] [VARIABLES_JSON]
#
#   examples/run.sh examples/org_users.graphql
#   examples/run.sh examples/ticket.graphql http://127.0.0.1:8080/graphql
#   examples/run.sh examples/paging.graphql "" '{"after": "…"}'
#
# URL defaults to $ITEMGRAPH_URL, else http://127.0.0.1:8080/graphql (what
# `cargo run --release` serves); a URL without a path gets `/graphql`. Needs curl; the
# output is pretty-printed when jq is installed.
set -euo pipefail

usage() {
  echo "usage: $0 FILE.graphql [URL] [VARIABLES_JSON]" >&2
  exit 2
}

file=${1:-}
[[ -n $file ]] || usage
[[ -r $file ]] || { echo "$0: cannot read $file" >&2; exit 2; }
url=${2:-${ITEMGRAPH_URL:-http://127.0.0.1:8080/graphql}}
[[ $url =~ ^https?://[^/]+/?$ ]] && url="${url%/}/graphql"
variables=${3:-null}

# The file as a JSON string: escape backslashes, quotes and control characters.
json_string() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/\\r}
  s=${s//$'\n'/\\n}
  printf '"%s"' "$s"
}

query=$(<"$file")
body=$(printf '{"query": %s, "variables": %s}' "$(json_string "$query")" "$variables")

response=$(curl --silent --show-error --request POST "$url" \
  --header 'content-type: application/json' \
  --header 'accept: application/graphql-response+json, application/json;q=0.9' \
  --header 'x-itemgraph-trace: 1' \
  --data-binary "$body")

if command -v jq >/dev/null; then
  jq . <<<"$response"
  jq -r '"\(.extensions.dynamodb.requestCount // "?") DynamoDB request(s)"' <<<"$response" >&2
else
  printf '%s\n' "$response"
fi
