-- Nexmark q8: monitor new users — persons who created an auction in the
-- same 10-second window as they registered.
-- Changes: CREATE TABLE … AS for the sink; P groups by id and takes
-- MAX(name) (the name follows from the id; a join of aggregates joins on
-- their whole key); A names its seller id, so that the two keys pair up
-- by name; the join is on the key and starttime (a TUMBLE window's end
-- follows from its start).
CREATE TABLE nexmark_q8 AS
SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, MAX(name) AS name, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY id, window_start, window_end
) P
JOIN (
  SELECT seller AS id, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.id AND P.starttime = A.starttime;
