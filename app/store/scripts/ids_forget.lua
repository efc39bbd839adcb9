-- Ids unmapped, each only while it still points at the given handle (id_ops.lua), and
-- uncounted in the same step (IdMap.forget, app/store/ids.py). Single server only: it
-- writes keys of many slots, named in its arguments.
-- ARGV[1] the kept count's HASH (Layout.id_count), then for each id: its bucket HASH, the
-- id, the handle (decimal). Returns, for each id, 1 when this dropped it, else 0; the
-- count ('n') goes down and the generation ('gen') up by the ones dropped.
local gone, out = 0, {}
for i = 2, #ARGV, 3 do
  local dropped = forget_id(ARGV[i], ARGV[i + 1], ARGV[i + 2])
  gone = gone + dropped
  out[#out + 1] = dropped
end
if gone > 0 then
  redis.call('HINCRBY', ARGV[1], 'n', -gone)
  redis.call('HINCRBY', ARGV[1], 'gen', gone)
end
return out
