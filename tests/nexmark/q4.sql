-- Nexmark q4: average price for a category — the average of the winning
-- bids' prices of the auctions of each category.
-- Changes: CREATE TABLE … AS for the sink (its key, the category, in
-- KEY_FORMAT='JSON'); Flink's AVG of a BIGINT is a
-- BIGINT (the quotient truncated), written CAST(AVG(Q.final) AS BIGINT),
-- named final as the suite's sink names it. The join of the two streams
-- without WITHIN is Flink's regular join (both kept for good; the
-- statement is in the SQL dialect: a comma join, a derived table); Q is
-- the table of each auction's highest bid so far within its time
-- range, and the average over it retracts an auction's old maximum when
-- a higher bid comes.
CREATE TABLE nexmark_q4 WITH (KEY_FORMAT='JSON') AS
SELECT
    Q.category,
    CAST(AVG(Q.final) AS BIGINT) AS final
FROM (
    SELECT MAX(B.price) AS final, A.category
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
    GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
