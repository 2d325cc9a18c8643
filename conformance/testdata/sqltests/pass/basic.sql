-- SQL tests in ksqlDB's sql-tests/ format, written for sqlstreams: every
-- test here must pass.

----------------------------------------------------------------------------------------------------
--@test: stream: values, a subset of columns and ROWTIME
----------------------------------------------------------------------------------------------------
CREATE STREAM a (id INT KEY, col1 INT, col2 STRING) WITH (kafka_topic='a', value_format='JSON');
CREATE STREAM b AS SELECT id, col1 * 2 AS doubled, col2 FROM a WHERE col1 > 0;

INSERT INTO a (rowtime, id, col1, col2) VALUES (10, 1, 0, 'dropped');
INSERT INTO a (rowtime, id, col1, col2) VALUES (20, 2, 3, 'kept');
INSERT INTO a (id, col1, col2) VALUES (3, 4, 'now');

-- the records inserted into a source count too
ASSERT VALUES a (rowtime, id, col1) VALUES (10, 1, 0);
ASSERT VALUES b (rowtime, id, doubled, col2) VALUES (20, 2, 6, 'kept');
ASSERT VALUES b (col2, id) VALUES ('now', 3);

----------------------------------------------------------------------------------------------------
--@test: table: updates and tombstones
----------------------------------------------------------------------------------------------------
CREATE TABLE t (id INT PRIMARY KEY, col1 INT) WITH (kafka_topic='t', value_format='JSON');
CREATE TABLE pos AS SELECT * FROM t WHERE col1 > 0;

INSERT INTO t (id, col1) VALUES (1, 1);
INSERT INTO t (id, col1) VALUES (1, 0);
INSERT INTO t (id, col1) VALUES (1, 2);

ASSERT VALUES pos (id, col1) VALUES (1, 1);
ASSERT NULL VALUES pos (id) KEY (1);
ASSERT VALUES pos (id, col1) VALUES (1, 2);
ASSERT TABLE pos (id INT PRIMARY KEY, col1 INT) WITH (kafka_topic='POS', value_format='JSON');

----------------------------------------------------------------------------------------------------
--@test: query upgrade: CREATE OR REPLACE keeps the query's position
----------------------------------------------------------------------------------------------------
SET 'ksql.create.or.replace.enabled' = 'true';

CREATE STREAM a (id INT KEY, col1 INT) WITH (kafka_topic='a', value_format='JSON');
CREATE STREAM b AS SELECT * FROM a;

INSERT INTO a (id, col1) VALUES (1, 0);
ASSERT VALUES b (id, col1) VALUES (1, 0);

CREATE OR REPLACE STREAM b AS SELECT * FROM a WHERE col1 > 0;

INSERT INTO a (id, col1) VALUES (1, 0);
INSERT INTO a (id, col1) VALUES (1, 1);

ASSERT VALUES b (id, col1) VALUES (1, 1);

----------------------------------------------------------------------------------------------------
--@test: aggregation (AVRO)
----------------------------------------------------------------------------------------------------
CREATE STREAM foo (id INT KEY, col1 INT) WITH (kafka_topic='foo', value_format='AVRO');
CREATE TABLE bar AS SELECT id, COUNT(*) AS count FROM foo GROUP BY id;

INSERT INTO foo (rowtime, id, col1) VALUES (5, 1, 1);
INSERT INTO foo (rowtime, id, col1) VALUES (6, 1, 1);
ASSERT VALUES bar (rowtime, id, count) VALUES (5, 1, 1);
ASSERT VALUES bar (rowtime, id, count) VALUES (6, 1, 2);

----------------------------------------------------------------------------------------------------
--@test: an expected error: ASSERT STREAM with another topic
--@expected.error: io.confluent.ksql.util.KsqlException
--@expected.message: Expected kafka topic does not match actual for source BAR
----------------------------------------------------------------------------------------------------
CREATE STREAM foo (id INT KEY, col1 INT) WITH (kafka_topic='foo', value_format='JSON');
CREATE STREAM bar AS SELECT * FROM foo;

ASSERT STREAM bar (id INT KEY, col1 INT) WITH (kafka_topic='BAZ', value_format='JSON');

----------------------------------------------------------------------------------------------------
--@test: an expected error: a wrong value
--@expected.error: java.lang.AssertionError
--@expected.message: Expected record does not match actual
----------------------------------------------------------------------------------------------------
CREATE STREAM foo (id INT KEY, col1 INT) WITH (kafka_topic='foo', value_format='JSON');
CREATE STREAM bar AS SELECT * FROM foo;

INSERT INTO foo (id, col1) VALUES (1, 1);
ASSERT VALUES bar (id, col1) VALUES (1, 2);

----------------------------------------------------------------------------------------------------
--@test: ALTER STREAM adds a column that a later query reads
----------------------------------------------------------------------------------------------------
CREATE STREAM a (id INT KEY, col1 INT) WITH (kafka_topic='a', value_format='JSON');
ALTER STREAM a ADD COLUMN col2 STRING;
CREATE STREAM b AS SELECT * FROM a;

INSERT INTO a (id, col1, col2) VALUES (1, 1, 'x');

ASSERT VALUES b (id, col1, col2) VALUES (1, 1, 'x');
ASSERT STREAM a (id INT KEY, col1 INT, col2 STRING) WITH (kafka_topic='a', value_format='JSON');
