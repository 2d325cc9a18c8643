CREATE STREAM person (id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, dateTime TIMESTAMP, extra VARCHAR) WITH (KAFKA_TOPIC='persons', VALUE_FORMAT='JSON', PARTITIONS=2, TIMESTAMP='dateTime');
CREATE STREAM auction (id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, dateTime TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR) WITH (KAFKA_TOPIC='auctions', VALUE_FORMAT='JSON', PARTITIONS=2, TIMESTAMP='dateTime');
CREATE STREAM bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP, extra VARCHAR) WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=2, TIMESTAMP='dateTime');
-- The same persons and auctions as tables keyed by id (the generator's
-- keys are the ids' digits, which KEY_FORMAT='JSON' reads as BIGINT):
-- Flink's regular joins of insert-only inputs end in the state a join of
-- tables ends in.
CREATE TABLE person_t (id BIGINT PRIMARY KEY, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, dateTime TIMESTAMP, extra VARCHAR) WITH (KAFKA_TOPIC='persons', KEY_FORMAT='JSON', VALUE_FORMAT='JSON', TIMESTAMP='dateTime');
CREATE TABLE auction_t (id BIGINT PRIMARY KEY, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, dateTime TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR) WITH (KAFKA_TOPIC='auctions', KEY_FORMAT='JSON', VALUE_FORMAT='JSON', TIMESTAMP='dateTime');
-- Nexmark q13's side input: the suite's bounded file of 10,000 rows
-- (key i, value 'i') as a table over a topic, which the test and the
-- bench fill beforehand.
CREATE TABLE side_input (key BIGINT PRIMARY KEY, value VARCHAR) WITH (KAFKA_TOPIC='side_input', KEY_FORMAT='JSON', VALUE_FORMAT='JSON', PARTITIONS=2);
