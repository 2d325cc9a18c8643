-- Nexmark q17: auction statistics per day.
-- Changes: CREATE TABLE … AS for the sink (its key, auction and day,
-- needs KEY_FORMAT='JSON'); Flink's AVG of a BIGINT is a BIGINT (the
-- quotient truncated), written CAST(AVG(price) AS BIGINT).
CREATE TABLE nexmark_q17 WITH (KEY_FORMAT='JSON') AS SELECT
  auction,
  DATE_FORMAT(dateTime, 'yyyy-MM-dd') AS `day`,
  count(*) AS total_bids,
  count(*) filter (where price < 10000) AS rank1_bids,
  count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
  count(*) filter (where price >= 1000000) AS rank3_bids,
  min(price) AS min_price,
  max(price) AS max_price,
  CAST(avg(price) AS BIGINT) AS avg_price,
  sum(price) AS sum_price
FROM bid
GROUP BY auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd');
