-- The one add and one remove of a (handle, band key) entry, shared by the one-entry
-- scripts (band_add.lua, band_remove.lua: a cluster, one call per entry, keys in KEYS)
-- and the many-entry ones (band_add_many.lua, band_remove_many.lua: a single server);
-- scripts/__init__.py puts it before each of them, after the constants' preamble.
-- A band's field holds its handles inline (HANDLE_BYTES each) until there are more
-- than `most` bytes of them; then all move to the band's sorted set (scored by handle)
-- and the field holds SPILLED and the set's size, so one lookup tells a query how
-- large every hot band is.

-- Add handle (packed) to the band at field of bucket (spill: its sorted set); 1 when
-- it was not there yet.
local function band_add(bucket, spill, field, handle, most)
  if redis.call('HSETNX', bucket, field, handle) == 1 then return 1 end
  local v = redis.call('HGET', bucket, field)
  local spilled = string.sub(v, 1, #SPILLED) == SPILLED
  if not spilled then
    for i = 1, #v, HANDLE_BYTES do
      if string.sub(v, i, i + HANDLE_BYTES - 1) == handle then return 0 end
    end
    if #v < most then
      redis.call('HSET', bucket, field, v .. handle)
      return 1
    end
    for i = 1, #v, HANDLE_BYTES do
      local h = struct.unpack(HANDLE, v, i)
      redis.call('ZADD', spill, h, h)
    end
  end
  local h = struct.unpack(HANDLE, handle)  -- one value: unpack also returns a position
  local added = redis.call('ZADD', spill, h, h)
  redis.call('HSET', bucket, field, SPILLED .. struct.pack(HANDLE, redis.call('ZCARD', spill)))
  return added
end

-- Remove handle (packed) from the band, inline or spilled; a band left empty loses its
-- field, and a spilled band's field keeps its set's size. 1 when it was there.
local function band_remove(bucket, spill, field, handle)
  local v = redis.call('HGET', bucket, field)
  if not v then return 0 end
  if string.sub(v, 1, #SPILLED) == SPILLED then
    local h = struct.unpack(HANDLE, handle)
    local removed = redis.call('ZREM', spill, h)
    local left = redis.call('ZCARD', spill)
    if left == 0 then redis.call('HDEL', bucket, field)
    else redis.call('HSET', bucket, field, SPILLED .. struct.pack(HANDLE, left)) end
    return removed
  end
  for i = 1, #v, HANDLE_BYTES do
    if string.sub(v, i, i + HANDLE_BYTES - 1) == handle then
      local rest = string.sub(v, 1, i - 1) .. string.sub(v, i + HANDLE_BYTES)
      if #rest == 0 then redis.call('HDEL', bucket, field)
      else redis.call('HSET', bucket, field, rest) end
      return 1
    end
  end
  return 0
end
