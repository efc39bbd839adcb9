-- Add a handle to a band that already has members (a new band takes HSETNX).
-- Appends to the inline handles, or moves them all to the sorted set once
-- there are more than ARGV[4], which keeps the HASH value small enough for a
-- listpack. A spilled band's field holds the marker (four 0xff bytes, which
-- no handle is) and the set's size, so one lookup tells a query how large
-- every hot band is.
-- KEYS[1] the bucket HASH, KEYS[2] the band's spill ZSET; ARGV[1] the field
-- (band key), ARGV[2] the handle (uint32 LE), ARGV[3] the handle (decimal),
-- ARGV[4] the most handles kept inline. Returns 1 when the handle was added.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) return 1 end
local spilled = string.sub(v, 1, 4) == '\255\255\255\255'
if not spilled then
  for i = 1, #v, 4 do
    if string.sub(v, i, i + 3) == ARGV[2] then return 0 end
  end
  if #v < 4 * tonumber(ARGV[4]) then
    redis.call('HSET', KEYS[1], ARGV[1], v .. ARGV[2])
    return 1
  end
  for i = 1, #v, 4 do
    local h = struct.unpack('<I4', v, i)
    redis.call('ZADD', KEYS[2], h, h)
  end
end
local added = redis.call('ZADD', KEYS[2], ARGV[3], ARGV[3])
local size = struct.pack('<I4', redis.call('ZCARD', KEYS[2]))
redis.call('HSET', KEYS[1], ARGV[1], '\255\255\255\255' .. size)
return added
