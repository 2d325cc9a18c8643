-- SQL tests in ksqlDB's sql-tests/ format, written for sqlstreams: every
-- test here must be reported as a failure.

--@test: a wrong value
CREATE STREAM foo (id INT KEY, col1 INT) WITH (kafka_topic='foo', value_format='JSON');
CREATE STREAM bar AS SELECT * FROM foo;
INSERT INTO foo (id, col1) VALUES (1, 1);
ASSERT VALUES bar (id, col1) VALUES (1, 2);

--@test: a wrong ROWTIME
CREATE STREAM foo (id INT KEY, col1 INT) WITH (kafka_topic='foo', value_format='JSON');
CREATE STREAM bar AS SELECT * FROM foo;
INSERT INTO foo (rowtime, id, col1) VALUES (7, 1, 1);
ASSERT VALUES bar (rowtime, id, col1) VALUES (8, 1, 1);

--@test: a record that never comes
CREATE STREAM foo (id INT KEY, col1 INT) WITH (kafka_topic='foo', value_format='JSON');
CREATE STREAM bar AS SELECT * FROM foo WHERE col1 > 5;
INSERT INTO foo (id, col1) VALUES (1, 1);
ASSERT VALUES bar (id, col1) VALUES (1, 1);

--@test: a value where a tombstone is expected
CREATE TABLE t (id INT PRIMARY KEY, col1 INT) WITH (kafka_topic='t', value_format='JSON');
CREATE TABLE u AS SELECT * FROM t;
INSERT INTO t (id, col1) VALUES (1, 1);
ASSERT NULL VALUES u (id) KEY (1);

--@test: an expected error that does not come
--@expected.error: java.lang.AssertionError
--@expected.message: Expected record does not match actual
CREATE STREAM foo (id INT KEY, col1 INT) WITH (kafka_topic='foo', value_format='JSON');
CREATE STREAM bar AS SELECT * FROM foo;
INSERT INTO foo (id, col1) VALUES (1, 1);
ASSERT VALUES bar (id, col1) VALUES (1, 1);
