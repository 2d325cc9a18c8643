# Sourced by scripts/run and scripts/test: makes sure the tools and
# libraries sqlstreams needs are installed on a Debian machine, installing
# what is missing with apt-get. Safe to run again and again.

export PATH="$PATH:/usr/local/go/bin:$HOME/go/bin"

need=()
[ -f /usr/include/rocksdb/c.h ] || need+=(librocksdb-dev)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v psql >/dev/null 2>&1 || need+=(postgresql-client)
/usr/bin/python3 -I -c 'import psycopg2' >/dev/null 2>&1 || need+=(python3-psycopg2)
# Kafka clients the broker's compatibility and crash tests drive.
/usr/bin/python3 -I -c 'import confluent_kafka' >/dev/null 2>&1 || need+=(python3-confluent-kafka)
/usr/bin/python3 -I -c 'import kafka' >/dev/null 2>&1 || need+=(python3-kafka)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
# The batch oracle of the scale-out fault tests.
command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)
# Confluent's Python Avro serializer and JSON Schema deserializer, and
# Google's protoc, for the registry formats' end-to-end tests.
/usr/bin/python3 -I -c 'import confluent_kafka.avro' >/dev/null 2>&1 || need+=(python3-confluent-kafka python3-avro python3-requests)
/usr/bin/python3 -I -c 'import jsonschema' >/dev/null 2>&1 || need+=(python3-jsonschema)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
# Headless Chromium for the web console's browser test; only the test
# command asks for it (scripts/test sets SQLSTREAMS_TEST_DEPS=1).
# The other real clients the tests drive. Under CI=true (scripts/test sets
# it) a test whose tool is missing fails instead of skipping
# (internal/testtool), so everything they need is listed here.
if [ "${SQLSTREAMS_TEST_DEPS:-}" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
  # node: node-postgres' test in server/pgwire and the console's splitter.
  command -v node >/dev/null 2>&1 || need+=(nodejs)
  command -v npm >/dev/null 2>&1 || need+=(npm)
  command -v curl >/dev/null 2>&1 || need+=(curl)
  # script gives psql a terminal in server/pgwire's COPY test.
  command -v script >/dev/null 2>&1 || need+=(bsdutils)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >&2
fi

# node-postgres, pinned in server/pgwire/testdata/node/package-lock.json.
if [ "${SQLSTREAMS_TEST_DEPS:-}" = 1 ] && [ ! -f server/pgwire/testdata/node/node_modules/pg/package.json ]; then
  echo "installing node-postgres (npm ci in server/pgwire/testdata/node)" >&2
  (cd server/pgwire/testdata/node && npm ci --no-audit --no-fund --loglevel=error >&2) ||
    echo "npm ci failed: TestRealNodePostgres will fail under CI=true" >&2
fi

if ! command -v go >/dev/null 2>&1; then
  echo "Go is not installed: sqlstreams needs Go 1.26 or newer (https://go.dev/dl/)." >&2
  exit 1
fi
