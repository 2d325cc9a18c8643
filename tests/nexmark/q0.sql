-- Nexmark q0: pass-through.
-- Changes: INSERT INTO nexmark_q0 → CREATE STREAM nexmark_q0 AS (the sink is a Kafka topic).
CREATE STREAM nexmark_q0 AS SELECT auction, bidder, price, dateTime, extra FROM bid;
