-- The check's repair of the kept id count: set its 'n' from ARGV[2] to ARGV[3] only while
-- the id map's generation is still ARGV[1], the one the check's scan began and ended
-- with (no id mapped or dropped meanwhile, adds and deletes that cancel out included, so
-- the scan saw the map as it is), and 'n' is still ARGV[2] (so the passes of several
-- workers that found the same drift mend it once). KEYS[1] the count HASH. Returns 1
-- when it set it, else 0.
local gen, n = unpack(redis.call('HMGET', KEYS[1], 'gen', 'n'))
if (tonumber(gen) or 0) ~= tonumber(ARGV[1]) or (tonumber(n) or 0) ~= tonumber(ARGV[2]) then
  return 0
end
redis.call('HSET', KEYS[1], 'n', ARGV[3])
return 1
