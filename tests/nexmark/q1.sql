-- Nexmark q1: currency conversion.
-- Changes: CREATE STREAM … AS for the sink.
CREATE STREAM nexmark_q1 AS SELECT auction, bidder, 0.908 * price AS price, dateTime, extra FROM bid;
