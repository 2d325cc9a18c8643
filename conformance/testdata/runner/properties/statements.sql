-- ksql-test-runner form with SET and UNSET between the statements: each
-- applies to the statements after it (docs/properties.md). The default
-- value format makes SRC's JSON, the topic name prefix names OUT's topic
-- (not LISTS'), and the COLLECT_LIST limit keeps one element.
SET 'ksql.persistence.default.format.value' = 'JSON';
CREATE STREAM src (id INT KEY, v INT) WITH (kafka_topic = 'src', partitions = 1);
SET 'ksql.output.topic.name.prefix' = 'p_';
CREATE STREAM out AS SELECT id, v FROM src WHERE v > 1;
UNSET 'ksql.output.topic.name.prefix';
SET 'ksql.functions.collect_list.limit' = '1';
CREATE TABLE lists AS SELECT id, COLLECT_LIST(v) AS vs FROM src GROUP BY id;
