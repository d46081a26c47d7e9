#!/usr/bin/env bash
# Smoke-test a build: `sublane serve --port 0` must print "listening on", answer HTTP, and stop
# cleanly on Ctrl-C (SIGINT). Uses a throwaway data dir and a plaintext file keyring.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-dist/sublane/sublane}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export PYTHON_KEYRING_BACKEND=keyrings.alt.file.PlaintextKeyring
export KEYRING_PROPERTY_FILE_PATH="$TMP/k.cfg"
"$BIN" serve --port 0 --data-dir "$TMP" >"$TMP/out" 2>"$TMP/err" &
PID=$!
for _ in $(seq 1 100); do
    grep -q "listening on" "$TMP/out" && break
    kill -0 "$PID" 2>/dev/null || { cat "$TMP/err" >&2; exit 1; }
    sleep 0.1
done
URL="$(sed -n 's/^listening on //p' "$TMP/out")"
[ -n "$URL" ] || { echo "smoke: no 'listening on' line" >&2; cat "$TMP/err" >&2; kill "$PID"; exit 1; }
echo "smoke: $(cat "$TMP/out")"
STATUS="$(python3 -c "import urllib.request,sys
try: urllib.request.urlopen(sys.argv[1] + '/v1/models')
except urllib.error.HTTPError as e: print(e.code)" "$URL")"
echo "smoke: GET /v1/models without a key -> $STATUS (expected 401)"
kill -INT "$PID"
wait "$PID"
echo "smoke: stopped cleanly (exit $?)"
[ "$STATUS" = "401" ]
