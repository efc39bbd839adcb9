-- The first half of band_add_many.lua and band_remove_many.lua (scripts/__init__.py
-- puts it before them): their arguments, and entries(), which walks the packed
-- entries in order, giving each one's bucket HASH, spill key, field and handle.
-- ARGV[1] the buckets' key head (prefix .. 'B{'), ARGV[2] the spill keys' head
-- (prefix .. 'S{' for ZSETs, prefix .. 'H{' for packed STRINGs: packed_spills),
-- ARGV[3] how many hex digits name a bucket, ARGV[4] the most handles kept inline,
-- ARGV[5] the entries: each the bucket's hex digits and '}', the field (ARGV[6] bytes:
-- BAND_KEY_BYTES, a band key; 4 for every field of a collection with short fields,
-- and for anchors' with short anchor fields) and the handle (HANDLE_BYTES, packed).
-- The spill key is left nil (band_ops.lua's spill_of names it when a band spills).
local hash_head, spill_head = ARGV[1], ARGV[2]
local packed_spills = string.sub(spill_head, -#PACKED_HEAD) == PACKED_HEAD
local digits = tonumber(ARGV[3])
local packed = ARGV[5]
local width = tonumber(ARGV[6] or BAND_KEY_BYTES)
spill_of = function(bucket, field)
  return spill_head .. string.sub(bucket, #hash_head + 1) .. field
end
local function entries()
  local step = digits + 1 + width + HANDLE_BYTES
  local at = 1 - step
  return function()
    at = at + step
    if at > #packed then return nil end
    local f = at + digits + 1
    local h = f + width
    return hash_head .. string.sub(packed, at, f - 1), nil, string.sub(packed, f, h - 1),
      string.sub(packed, h, h + HANDLE_BYTES - 1)
  end
end
