-- Nexmark q5: hot items — the auctions with the most bids in each sliding window.
-- Changes: CREATE TABLE … AS for the sink; the result selects the
-- window's start too (it is part of the key: one row per auction and
-- window); MaxBids groups by the window's start alone and the join is on
-- starttime (a foreign-key join has one key column; a HOP window's end
-- follows from its start).
CREATE TABLE nexmark_q5 AS
SELECT AuctionBids.auction, AuctionBids.starttime, AuctionBids.num
 FROM (
   SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
     FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
 ) AS AuctionBids
 JOIN (
   SELECT max(CountBids.num) AS maxn, CountBids.starttime
   FROM (
     SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
     FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
     ) AS CountBids
   GROUP BY CountBids.starttime
 ) AS MaxBids
 ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.num >= MaxBids.maxn;
