-- Add many (handle, band key) entries in one call: band_add.lua's semantics per
-- entry, in order (HSETNX for a band nobody has yet, else append inline, else
-- spill to the sorted set once there are more than ARGV[4] handles), so Redis
-- answers once per call instead of once per entry. (The store sends it only the
-- entries a native HSETNX did not settle: an entry costs Redis ~1.2 us more
-- from Lua than as a pipelined HSETNX, bench/band_calls.py.)
-- SINGLE SERVER ONLY: the script builds its key names itself (bucket HASH and
-- spill ZSET of each entry) instead of taking them in KEYS, and they span many
-- slots. A Redis Cluster keeps the per-key commands (app.store.store).
-- ARGV as band_entries.lua reads it, which comes first.
-- Returns how many entries were added (not there already).
local most = 4 * tonumber(ARGV[4])
local added = 0
for bucket, spill, field, handle in entries() do
  if redis.call('HSETNX', bucket, field, handle) == 1 then
    added = added + 1
  else
    local v = redis.call('HGET', bucket, field)
    local known = false
    local spilled = string.sub(v, 1, 4) == marker
    if not spilled then
      for i = 1, #v, 4 do
        if string.sub(v, i, i + 3) == handle then known = true break end
      end
    end
    if not known then
      if not spilled and #v < most then
        redis.call('HSET', bucket, field, v .. handle)
        added = added + 1
      else
        if not spilled then
          for i = 1, #v, 4 do
            local h = struct.unpack('<I4', v, i)
            redis.call('ZADD', spill, h, h)
          end
        end
        local h = struct.unpack('<I4', handle)
        added = added + redis.call('ZADD', spill, h, h)
        local size = struct.pack('<I4', redis.call('ZCARD', spill))
        redis.call('HSET', bucket, field, marker .. size)
      end
    end
  end
end
return added
