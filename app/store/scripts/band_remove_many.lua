-- Remove many (handle, band key) entries in one call: band_ops.lua's band_remove per
-- entry, in order, so Redis answers once per call.
-- SINGLE SERVER ONLY, as band_add_many.lua: the script builds its key names
-- itself; ARGV as band_entries.lua reads it, which comes first (ARGV[4] unused).
-- Returns how many entries were there.
local removed = 0
for bucket, spill, field, handle in entries() do
  removed = removed + band_remove(bucket, spill, field, handle, packed_spills)
end
return removed
