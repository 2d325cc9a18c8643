-- Nexmark q10: log to a file system, partitioned by day and minute.
-- Changes: the sink is a Kafka topic (CREATE STREAM … AS), not a
-- partitioned file system; its dt and hm columns are kept.
CREATE STREAM nexmark_q10 AS SELECT auction, bidder, price, dateTime, extra, DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS dt, DATE_FORMAT(dateTime, 'HH:mm') AS hm FROM bid;
