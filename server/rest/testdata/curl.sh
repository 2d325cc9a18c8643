#!/usr/bin/env bash
# Drives the REST API with curl the way ksqlDB's documentation does.
# Usage: curl.sh BASE_URL [NAME_SUFFIX]. Exits non-zero with a message on
# the first unexpected answer.
set -euo pipefail
url=${1:?usage: curl.sh BASE_URL [NAME_SUFFIX]}
S=CURL_SRC${2:-}           # the stream
T=curl_src${2:-}; T=${T,,} # its topic

fail() { echo "curl.sh: $*" >&2; exit 1; }
expect() { # expect NAME HAYSTACK NEEDLE
	case "$2" in *"$3"*) ;; *) fail "$1: want $3 in: $2" ;; esac
}

# /ksql: statements, as in ksqlDB's "LIST STREAMS" example.
out=$(curl -sS --fail-with-body -X POST "$url/ksql" \
	-H 'Content-Type: application/vnd.ksql.v1+json; charset=utf-8' \
	-H 'Accept: application/vnd.ksql.v1+json' \
	-d "{
  \"ksql\": \"CREATE STREAM $S (ID INT KEY, NAME STRING) WITH (KAFKA_TOPIC='$T', VALUE_FORMAT='JSON', PARTITIONS=1); INSERT INTO $S (ID, NAME) VALUES (1, 'one'); INSERT INTO $S (ID, NAME) VALUES (2, 'two'); LIST STREAMS;\",
  \"streamsProperties\": {}
}")
expect "/ksql create" "$out" "\"commandId\":\"stream/$S/create\""
expect "/ksql list" "$out" '"@type":"streams"'
expect "/ksql list" "$out" "\"name\":\"$S\""

# /ksql: a statement error is a 400 with a JSON body.
code=$(curl -sS -o /tmp/curl-sh-err.$$ -w '%{http_code}' -X POST "$url/ksql" -d '{"ksql": "DESCRIBE NOPE;"}')
err=$(cat /tmp/curl-sh-err.$$); rm -f /tmp/curl-sh-err.$$
[ "$code" = 400 ] || fail "/ksql error: HTTP $code: $err"
expect "/ksql error" "$err" '"error_code":40001'

# /query-stream: delimited by default, header then rows.
out=$(curl -sS --fail-with-body -X POST "$url/query-stream" \
	-d "{\"sql\": \"SELECT * FROM $S EMIT CHANGES LIMIT 2;\", \"properties\": {\"auto.offset.reset\": \"earliest\"}}")
expect "/query-stream header" "$(sed -n 1p <<<"$out")" '"columnNames":["ID","NAME"]'
[ "$(sed -n 2p <<<"$out")" = '[1,"one"]' ] || fail "/query-stream row 1: $out"
[ "$(sed -n 3p <<<"$out")" = '[2,"two"]' ] || fail "/query-stream row 2: $out"

# /query-stream with Accept: application/json: one JSON array.
out=$(curl -sS --fail-with-body -X POST "$url/query-stream" -H 'Accept: application/json' \
	-d "{\"sql\": \"SELECT NAME FROM $S EMIT CHANGES LIMIT 1;\", \"properties\": {\"auto.offset.reset\": \"earliest\"}}")
expect "/query-stream json" "$out" ',["one"]]'

echo ok
