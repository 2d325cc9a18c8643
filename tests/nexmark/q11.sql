-- Nexmark q11: user sessions, the bids of each bidder per session (a
-- session closes after 10 s without a bid), in Flink's legacy group
-- window.
-- Changes: CREATE TABLE … AS for the sink (its key, bidder, needs
-- KEY_FORMAT='JSON'); dateTime without backticks (the DDL's column is
-- unquoted, DATETIME). starttime and endtime are BIGINT epoch
-- milliseconds, not TIMESTAMP(3); endtime is Flink's, the session's last
-- bid + 10 s. The aggregate emits each session as it grows (EMIT
-- CHANGES) and deletes the sessions a late bid merges: the topic read as
-- a changelog ends in Flink's sessions.
CREATE TABLE nexmark_q11 WITH (KEY_FORMAT='JSON') AS SELECT
    B.bidder,
    count(*) as bid_count,
    SESSION_START(B.dateTime, INTERVAL '10' SECOND) as starttime,
    SESSION_END(B.dateTime, INTERVAL '10' SECOND) as endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND);
