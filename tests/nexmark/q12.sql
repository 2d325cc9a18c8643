-- Nexmark q12: the bids of each bidder per 10 s of processing time.
-- Changes: B is a stream (CREATE STREAM … AS), not a view: the window
-- table function reads a stream by name, and p_time is then the wall
-- clock when B's query read the bid (PROCTIME() is the wall clock, a
-- TIMESTAMP); the window columns are BIGINT epoch milliseconds; CREATE
-- TABLE … AS for the sink (its key, bidder, needs KEY_FORMAT='JSON').
-- Processing-time windows depend on when the bids are read: the test
-- checks the totals only.
CREATE STREAM B AS SELECT *, PROCTIME() as p_time FROM bid;
CREATE TABLE nexmark_q12 WITH (KEY_FORMAT='JSON') AS SELECT
    bidder,
    count(*) as bid_count,
    window_start AS starttime,
    window_end AS endtime
FROM TABLE(
        TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
