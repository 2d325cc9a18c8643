-- Nexmark q6: average selling price by seller — the average of the
-- final prices of each seller's last 10 closed auctions.
-- Changes: Flink cannot run the suite's text (FLINK-19059: its OVER
-- window does not take the retractions of the Top-1 below it), and its
-- AVG … OVER (ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) gives every
-- winning bid a row of its own, over 11 rows. Written with the nesting
-- it plainly means: Q is the table of each auction's final price (its
-- highest bid within its time range, as in q4, the auction's seller
-- and expiry grouped with it), the last 10 auctions of each seller by
-- their close (ROW_NUMBER() … ORDER BY expires DESC, a Top-N over that
-- table, which moves as prices rise and auctions come), and the average
-- of their final prices per seller (retracting, as a table's
-- aggregation); CREATE TABLE … AS for the sink (its key, the seller, in
-- KEY_FORMAT='JSON'); Flink's AVG of a BIGINT is a BIGINT (the quotient
-- truncated), written CAST(AVG(…) AS BIGINT). As in Flink's text, an
-- auction counts once it has a bid in its time range, whether or not it
-- has expired yet. The join of the two streams without WITHIN is
-- Flink's regular join (the statement is in the SQL dialect).
CREATE TABLE nexmark_q6 WITH (KEY_FORMAT='JSON') AS
SELECT
    Q.seller,
    CAST(AVG(Q.final) AS BIGINT) AS avg_price
FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY seller ORDER BY expires DESC) AS rownum
    FROM (
        SELECT A.id AS id, A.seller AS seller, A.expires AS expires, MAX(B.price) AS final
        FROM auction AS A, bid AS B
        WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
        GROUP BY A.id, A.seller, A.expires
    )
) AS Q
WHERE Q.rownum <= 10
GROUP BY Q.seller;
