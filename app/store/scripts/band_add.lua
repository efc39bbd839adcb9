-- Add a handle to a band (band_ops.lua's band_add, which comes first): one entry, its
-- keys in KEYS, so Redis Cluster routes the call to the bucket's slot.
-- KEYS[1] the bucket HASH, KEYS[2] the band's spill key; ARGV[1] the field
-- (band key), ARGV[2] the handle (packed), ARGV[3] the handle (decimal, unused),
-- ARGV[4] the most handles kept inline, ARGV[5] '1' when spills are packed STRINGs
-- (else ZSETs), ARGV[6] (when the collection keeps marks) '1' for a band key, '0' for
-- an anchor. Returns 1 when the handle was added; with ARGV[6], {1 or 0, then the
-- handles (packed) to mark}, which the caller sets in the marks bitmap (another slot).
local most = HANDLE_BYTES * tonumber(ARGV[4])
local marked = ARGV[6] and {} or nil
local added = band_add(KEYS[1], KEYS[2], ARGV[1], ARGV[2], most, ARGV[5] == '1', marked, ARGV[6] == '1')
if not marked then return added end
table.insert(marked, 1, added)
return marked
