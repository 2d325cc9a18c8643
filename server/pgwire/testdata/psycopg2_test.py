# psycopg2 against sqlstreams; run by client_others_test.go, which gives
# the connection in PGHOST, PGPORT, PGUSER and PGDATABASE. It prints
# "ok <check>" per passing check and exits non-zero on the first failure.
import datetime
import decimal
import sys

import psycopg2
import psycopg2.extensions as ext


def ok(name):
    print("ok " + name, flush=True)


conn = psycopg2.connect("")
cur = conn.cursor()

cur.execute("SELECT version()")
assert cur.fetchone()[0].startswith("PostgreSQL 15"), "version"
ok("version")

# psycopg2 opened a transaction block before the first statement.
assert conn.info.transaction_status == ext.TRANSACTION_STATUS_INTRANS, conn.info.transaction_status
conn.commit()
assert conn.info.transaction_status == ext.TRANSACTION_STATUS_IDLE
ok("transaction status")

cur.execute("CREATE STREAM PY_S (ID INT KEY, NAME STRING, AMOUNT DOUBLE, OK BOOLEAN, AT TIMESTAMP, D DECIMAL(10, 2), TAGS ARRAY<INT>) "
            "WITH (KAFKA_TOPIC='py_s', VALUE_FORMAT='JSON', PARTITIONS=1)")
cur.execute("SET 'auto.offset.reset'='earliest'")
at = datetime.datetime(2024, 2, 29, 13, 14, 15, 123000)
# Client-side interpolation: psycopg2 quotes the string itself.
cur.execute("INSERT INTO PY_S (ID, NAME, AMOUNT, OK, AT, D) VALUES (%s, %s, %s, %s, %s, %s)",
            (1, "o'neil -- x", 2.5, True, at.isoformat(), decimal.Decimal("12.34")))
assert cur.rowcount == 1, cur.rowcount
cur.execute("INSERT INTO PY_S (ID, TAGS) VALUES (2, ARRAY[1, 2])")
conn.commit()
ok("insert")

cur.execute("SELECT ID, NAME, AMOUNT, OK, AT, D FROM PY_S WHERE ID = %s EMIT CHANGES LIMIT 1", (1,))
row = cur.fetchone()
assert [d.name for d in cur.description] == ["ID", "NAME", "AMOUNT", "OK", "AT", "D"], cur.description
assert row == (1, "o'neil -- x", 2.5, True, at, decimal.Decimal("12.34")), row
ok("select")

cur.execute("SELECT TAGS FROM PY_S WHERE ID = 2 EMIT CHANGES LIMIT 1")
assert cur.fetchone()[0] == [1, 2]  # json, decoded
ok("types")
conn.commit()

# An error inside the block fails the block until ROLLBACK, as in Postgres.
try:
    cur.execute("SELECT NOSUCH FROM PY_S EMIT CHANGES LIMIT 1")
    sys.exit("no error for an unknown column")
except psycopg2.Error as e:
    assert e.pgcode == "42703", e.pgcode
assert conn.info.transaction_status == ext.TRANSACTION_STATUS_INERROR
try:
    cur.execute("SELECT 1")
    sys.exit("no error in a failed transaction")
except psycopg2.errors.InFailedSqlTransaction:
    pass
conn.rollback()
cur.execute("SELECT 1")
assert cur.fetchone() == (1,)
conn.commit()
ok("failed transaction")

conn.autocommit = True
cur.execute("SET TIME ZONE 'UTC'")
cur.execute("SET application_name = %s", ("psycopg2-test",))
cur.execute("SHOW application_name")
assert cur.fetchone()[0] == "psycopg2-test"
cur.execute("SHOW TimeZone")
assert cur.fetchone()[0] == "UTC"
ok("set show")
conn.close()
