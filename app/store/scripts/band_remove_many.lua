-- Remove many (handle, band key) entries in one call: band_remove.lua's
-- semantics per entry, in order (a band left empty loses its field, a spilled
-- band's field keeps its set's size), so Redis answers once per call.
-- SINGLE SERVER ONLY, as band_add_many.lua: the script builds its key names
-- itself; ARGV as band_entries.lua reads it, which comes first (ARGV[4] unused).
-- Returns how many entries were there.
local removed = 0
for bucket, spill, field, handle in entries() do
  local v = redis.call('HGET', bucket, field)
  if v then
    if string.sub(v, 1, 4) == marker then
      local h = struct.unpack('<I4', handle)  -- one value: unpack also returns a position
      removed = removed + redis.call('ZREM', spill, h)
      local left = redis.call('ZCARD', spill)
      if left == 0 then redis.call('HDEL', bucket, field)
      else redis.call('HSET', bucket, field, marker .. struct.pack('<I4', left)) end
    else
      for i = 1, #v, 4 do
        if string.sub(v, i, i + 3) == handle then
          local rest = string.sub(v, 1, i - 1) .. string.sub(v, i + 4)
          if #rest == 0 then redis.call('HDEL', bucket, field)
          else redis.call('HSET', bucket, field, rest) end
          removed = removed + 1
          break
        end
      end
    end
  end
end
return removed
