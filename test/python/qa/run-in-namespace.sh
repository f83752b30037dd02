#!/usr/bin/env bash
# Serves a repository with `infernode serve` on the default ports (8000 HTTP, 8001 gRPC: Triton's
# QA tests hard-code localhost:8000/8001), waits until HTTP answers /v2/health/live, runs
# run_unittest.py with the given cases, then stops the server. Meant to run inside its own
# network namespace (`unshare -rn`, started by test/integration/python-qa.test.ts), so those
# ports are this run's alone.
#
# usage: run-in-namespace.sh <python> <results.json> <server.log> <case>... -- <infernode serve args>...
# cwd: where the QA test may write files (test_results.txt). PYTHONPATH is set by the caller.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
python="$1" results="$2" log="$3"
shift 3
cases=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do cases+=("$1"); shift; done
shift

node "$root/lib/cli/main.js" serve --metrics-port 8002 "$@" >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT

# The server is up once HTTP answers (live, not ready: some QA configurations restrict nothing
# there, and the repository may hold models that are meant to stay unloaded).
"$python" - "$server" <<'PY'
import os, sys, time, urllib.request
server = int(sys.argv[1])
deadline = time.monotonic() + 60
while True:
    try:
        urllib.request.urlopen("http://localhost:8000/v2/health/live", timeout=2)
        break
    except Exception as error:
        try:
            os.kill(server, 0)
        except OSError:
            sys.exit("infernode exited before serving")
        if time.monotonic() > deadline:
            sys.exit(f"infernode did not answer /v2/health/live within 60 s: {error}")
        time.sleep(0.1)
PY
SERVER_PID="$server" "$python" "$here/run_unittest.py" --out "$results" "${cases[@]}"
