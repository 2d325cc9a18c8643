-- Nexmark q3: local item suggestion (a join of auctions and persons).
-- Changes: CREATE TABLE … AS for the sink; Flink's regular join of the
-- two insert-only streams is a foreign-key join of the tables person_t
-- and auction_t (ddl.sql), which ends in the same rows (keyed by the
-- auction id) and keeps one row per auction and person instead of every
-- record of both streams.
CREATE TABLE nexmark_q3 AS SELECT P.name, P.city, P.state, A.id
FROM auction_t AS A INNER JOIN person_t AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
