-- Nexmark q7: highest bid — the bids whose price is the highest of
-- their 10-second window.
-- Changes: CREATE STREAM … AS for the sink; dateTime without backticks
-- (the DDL's column is unquoted, DATETIME). The sink's columns are the
-- SELECT's (the suite's sink declares bidder before price and inserts
-- by position: its bidder column gets the price), named as sqlstreams
-- names a join's columns: B.dateTime is B_DATETIME (B1 has a dateTime
-- too); the result is keyed by price (a stream join's key, KAFKA).
-- Semantics: B1, the windowed aggregation joined by an interval join,
-- emits each window once when it closes, as Flink's window aggregation
-- does (when stream time passes its end plus the window's grace — a
-- window table function's default grace, 24 hours less its size, where
-- Flink's watermark waits 4 s), as a stream whose event time is its
-- window_end (B1.dateTime); its rows are repartitioned by maxprice and
-- the bids by price, and joined within the BETWEEN's interval
-- (inclusive: a bid at a window's end joins that window too). The join
-- keeps the bids for that grace, the window and 24 hours (a bid meets
-- its window's row a grace after it). The BETWEEN stays in WHERE, as
-- Flink reads it (an INNER join's condition).
CREATE STREAM nexmark_q7 AS
SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
from bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end as dateTime
  FROM TABLE(
          TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime  - INTERVAL '10' SECOND AND B1.dateTime;
