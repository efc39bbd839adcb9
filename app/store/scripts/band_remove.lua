-- Remove a handle from a band, inline or spilled; a band left empty loses its
-- field, and a spilled band's field keeps its set's size up to date.
-- KEYS and ARGV as band_add.lua's. Returns 1 when the handle was there.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
if string.sub(v, 1, 4) == '\255\255\255\255' then
  local removed = redis.call('ZREM', KEYS[2], ARGV[3])
  local left = redis.call('ZCARD', KEYS[2])
  if left == 0 then redis.call('HDEL', KEYS[1], ARGV[1])
  else redis.call('HSET', KEYS[1], ARGV[1], '\255\255\255\255' .. struct.pack('<I4', left)) end
  return removed
end
for i = 1, #v, 4 do
  if string.sub(v, i, i + 3) == ARGV[2] then
    local rest = string.sub(v, 1, i - 1) .. string.sub(v, i + 4)
    if #rest == 0 then redis.call('HDEL', KEYS[1], ARGV[1])
    else redis.call('HSET', KEYS[1], ARGV[1], rest) end
    return 1
  end
end
return 0
