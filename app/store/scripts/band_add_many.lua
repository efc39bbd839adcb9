-- Add many (handle, band key) entries in one call: band_ops.lua's band_add per entry,
-- in order, so Redis answers once per call instead of once per entry. (The store
-- sends it only the entries a native HSETNX did not settle: an entry costs Redis
-- ~1.2 us more from Lua than as a pipelined HSETNX, bench/band_calls.py.)
-- SINGLE SERVER ONLY: the script builds its key names itself (bucket HASH and
-- spill ZSET of each entry) instead of taking them in KEYS, and they span many
-- slots. A Redis Cluster keeps the per-key commands (app.store.store).
-- ARGV as band_entries.lua reads it, which comes first, then ARGV[7] the collection's
-- marks bitmap ('' when it keeps none) and ARGV[8] '1' when the entries are band keys
-- ('0': passage anchors, which mark only the bands they spill).
-- Returns how many entries were added (not there already).
local most = HANDLE_BYTES * tonumber(ARGV[4])
local marks = ARGV[7] or ''
local marked = marks ~= '' and {} or nil
local band = ARGV[8] == '1'
local added = 0
for bucket, spill, field, handle in entries() do
  added = added + band_add(bucket, spill, field, handle, most, packed_spills, marked, band)
end
if marked then set_marks(marks, marked) end
return added
