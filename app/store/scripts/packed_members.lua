-- A page of a packed spill for the scans (Store.band_members), without reading the whole
-- band: its handles above ARGV[1], ascending, at most ARGV[2] of them (0: all), packed,
-- and how many it holds above ARGV[1] in all. KEYS[1] the spill (band_ops.lua, which
-- comes first, finds the first rank by binary search).
local n = math.floor(redis.call('STRLEN', KEYS[1]) / HANDLE_BYTES)
local above, most = tonumber(ARGV[1]), tonumber(ARGV[2])
local first = 0
if above > 0 and n > 0 then first = packed_find(KEYS[1], n, above + 1) end
local stop = n
if most > 0 and first + most < n then stop = first + most end
if stop <= first then return {n - first, ''} end
return {n - first, redis.call('GETRANGE', KEYS[1], first * HANDLE_BYTES, stop * HANDLE_BYTES - 1)}
