-- Nexmark q2: selection.
-- Changes: CREATE STREAM … AS for the sink.
CREATE STREAM nexmark_q2 AS SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
