-- Nexmark q21: channel ids from a regular expression.
-- Changes: CREATE STREAM … AS for the sink. REGEXP_EXTRACT keeps Flink's
-- argument order (string, regex, group).
CREATE STREAM nexmark_q21 AS SELECT
  auction, bidder, price, channel,
  CASE
    WHEN lower(channel) = 'apple' THEN '0'
    WHEN lower(channel) = 'google' THEN '1'
    WHEN lower(channel) = 'facebook' THEN '2'
    WHEN lower(channel) = 'baidu' THEN '3'
    ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
  END AS channel_id
FROM bid
WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL OR
      lower(channel) IN ('apple', 'google', 'facebook', 'baidu');
