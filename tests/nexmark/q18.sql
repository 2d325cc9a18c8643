-- Nexmark q18: the last bid of each bidder on each auction (deduplication).
-- Changes: CREATE TABLE … AS for the sink (its key, auction and bidder,
-- needs KEY_FORMAT='JSON').
CREATE TABLE nexmark_q18 WITH (KEY_FORMAT='JSON') AS SELECT auction, bidder, price, channel, url, dateTime, extra
 FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC) AS rank_number
       FROM bid)
 WHERE rank_number <= 1;
