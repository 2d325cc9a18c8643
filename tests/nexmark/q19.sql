-- Nexmark q19: the ten highest bids of each auction (Top-N).
-- Changes: CREATE TABLE … AS for the sink (its key, auction and
-- rank_number, needs KEY_FORMAT='JSON'). Bids of equal price rank the
-- later first.
CREATE TABLE nexmark_q19 WITH (KEY_FORMAT='JSON') AS SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
WHERE rank_number <= 10;
