-- Nexmark q20: expand bid with auction — the bids with their auction's
-- columns, for auctions of category 10 (a filter join).
-- Changes: CREATE STREAM … AS for the sink (its key, the auction id,
-- needs KEY_FORMAT='JSON'), the columns that the suite's sink table
-- names positionally named with AS; the join is written FROM bid AS B,
-- auction AS A WHERE B.auction = A.id, SQL's comma join, instead of
-- INNER JOIN … ON: a join of two streams without WITHIN is Flink's
-- regular join (both streams kept for good, each row joining every row
-- of the other with its key) in a statement in the SQL dialect, which
-- the comma join is (ksqlDB's grammar has none), while a ksqlDB
-- statement keeps ksqlDB's error (a forgotten WITHIN would keep both
-- streams for good). The result is a stream: an inner join of two
-- insert-only streams only inserts.
CREATE STREAM nexmark_q20 WITH (KEY_FORMAT='JSON') AS
SELECT
    auction, bidder, price, channel, url, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
    itemName, description, initialBid, reserve, A.dateTime AS auction_dateTime, expires, seller, category, A.extra AS auction_extra
FROM
    bid AS B, auction AS A
WHERE B.auction = A.id AND A.category = 10;
