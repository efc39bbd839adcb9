-- New ids mapped to their handles and counted in one step, so no crash or failed WAIT
-- can leave the id buckets' kept count behind them (IdMap.assign, app/store/ids.py).
-- Single server only: it writes keys of many slots, named in its arguments.
-- ARGV[1] the kept count's HASH (Layout.id_count), then for each id: its bucket HASH, the
-- id, its handle (decimal). Returns, for each id, 1 when this mapped it and 0 when
-- another writer had; the count ('n') and the id map's generation ('gen', which every
-- change of the map moves: the check's proof that nothing changed during its scan)
-- move by the ones mapped.
local added, out = 0, {}
for i = 2, #ARGV, 3 do
  local won = redis.call('HSETNX', ARGV[i], ARGV[i + 1], ARGV[i + 2])
  added = added + won
  out[#out + 1] = won
end
if added > 0 then
  redis.call('HINCRBY', ARGV[1], 'n', added)
  redis.call('HINCRBY', ARGV[1], 'gen', added)
end
return out
