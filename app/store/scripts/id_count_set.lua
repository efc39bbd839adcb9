-- The check's repair of the kept id count: set it to ARGV[2] only while it is still
-- ARGV[1], what the check's scan saw, so two passes that found the same drift (every
-- worker runs one) mend it once. KEYS[1] the count. Returns 1 when it set it, else 0.
if (tonumber(redis.call('GET', KEYS[1])) or 0) ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
