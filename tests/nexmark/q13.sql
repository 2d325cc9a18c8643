-- Nexmark q13: bounded side input join — each bid enriched by a lookup
-- of mod(auction, 10000) in a side table.
-- Changes: CREATE STREAM … AS for the sink. The side input is the table
-- side_input (ddl.sql) over a Kafka topic that the test and the bench
-- fill with the suite's 10,000 rows (key i, value 'i') before the query
-- starts, not a bounded CSV file. B reads bid directly, without FOR
-- SYSTEM_TIME AS OF B.p_time (TiDB's parser reads no FOR SYSTEM_TIME;
-- sqlstreams refuses it with this explanation) and the derived table
-- that added p_time = PROCTIME() for it: a stream–table join is that
-- processing-time lookup already, each bid meeting the table as it is
-- when the bid is processed. The join on an
-- expression repartitions the bids by mod(auction, 10000) (as ksqlDB
-- joins on expressions), and the result is keyed by it: S.key is
-- selected too, as ksqlDB wants a query's key in its projection.
CREATE STREAM nexmark_q13 AS
SELECT
    B.auction,
    B.bidder,
    B.price,
    B.dateTime,
    S.value,
    S.key
FROM bid B
JOIN side_input AS S
ON mod(B.auction, 10000) = S.key;
