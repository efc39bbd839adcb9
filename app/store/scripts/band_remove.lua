-- Remove a handle from a band (band_ops.lua's band_remove, which comes first): one
-- entry, KEYS and ARGV as band_add.lua's. Returns 1 when the handle was there.
return band_remove(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[5] == '1')
