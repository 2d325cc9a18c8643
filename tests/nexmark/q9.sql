-- Nexmark q9: winning bids — each auction's highest bid within its time
-- range (the earliest of equal bids), with the auction's columns.
-- Changes: CREATE TABLE … AS for the sink (its key, the auction id,
-- needs KEY_FORMAT='JSON'); A.* is spelled out as A's columns, unqualified
-- where only one side has them and A.dateTime AS dateTime, A.extra AS
-- extra where both do (a join's SELECT names a qualified column A_ID,
-- …, as ksqlDB does, and the outer SELECT reads them by the names Flink
-- gives them); B's columns likewise unqualified. The join of the two
-- streams without WITHIN is Flink's regular join (the statement is in
-- the SQL dialect: a comma join, a derived table, a Top-N); the Top-1
-- per auction is a table keyed by the auction id, a row replaced when a
-- higher bid comes.
CREATE TABLE nexmark_q9 WITH (KEY_FORMAT='JSON') AS
SELECT
    id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
    auction, bidder, price, bid_dateTime, bid_extra
FROM (
   SELECT id, itemName, description, initialBid, reserve, A.dateTime AS dateTime, expires, seller, category, A.extra AS extra,
     auction, bidder, price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
     ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
   FROM auction A, bid B
   WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
)
WHERE rownum <= 1;
