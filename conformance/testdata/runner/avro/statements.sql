-- ksql-test-runner form with AVRO sources and JSON input records: the
-- runner writes each record with the source's schema, so a value object
-- that also holds a copy of the key (as the files users write do) gives
-- the single value column its field, and a table's value reaches a join.
CREATE STREAM books (author VARCHAR KEY, title VARCHAR)
    WITH (kafka_topic = 'books', partitions = 1, value_format = 'avro');
CREATE TABLE authors (author VARCHAR PRIMARY KEY, born INT)
    WITH (kafka_topic = 'authors', partitions = 1, value_format = 'avro');
CREATE STREAM dated AS
    SELECT b.author, b.title, a.born
    FROM books b JOIN authors a ON b.author = a.author;
