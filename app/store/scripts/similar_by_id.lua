-- GET /similar/{id} in one exchange: the id's handle, its record, and the candidates
-- of the record's band keys with their records (rank.lua, by the rules of
-- candidates.lua), where stored.lua and then candidates.lua took two.
-- Single server only: it reads keys it builds itself.
-- ARGV[1] the record key head (nd:{c}:d:), ARGV[2] the bucket HASH head (nd:{c}:B{),
-- ARGV[3] the spill keys' head (nd:{c}:S{ for ZSETs, nd:{c}:H{ for packed STRINGs),
-- ARGV[4] the id's HASH (Layout.id_key), ARGV[5] the id,
-- ARGV[6] the cap, ARGV[7] how many hot members are read in full, ARGV[8] the most hot
-- members this script reads, ARGV[9] the bits and ARGV[10] the hex digits of a bucket
-- number (Layout.use_band_buckets), ARGV[11] '1' when the collection stores anchors'
-- keys as 4-byte fields (Layout.use_short_anchors), '2' when it stores every key's low
-- ARGV[12] bytes (Layout.use_short_fields: 4, or 2 in collections made since),
-- ARGV[13] the collection's marks bitmap ('' when it keeps none: Layout.marks).
-- Returns {} for an unknown id; {handle} when it has no record; {handle, record, -2}
-- when the record's band keys cannot be read here (the caller parses it and says
-- why); {handle, record, -1} when the hot keys' members are more than ARGV[8]; else
-- {handle, record, then candidates.lua's reply}. The caller checks the record's expiry.
local doc_head, hash_head, spill_head = ARGV[1], ARGV[2], ARGV[3]
local handle = redis.call('HGET', ARGV[4], ARGV[5])
if not handle then return {} end
local rec = redis.call('GET', doc_head .. handle)
if not rec then return {handle} end
-- The band keys' place in the record (app/index/records.py): after a header of 36
-- bytes (version 2; 32 in version 1) and the fingerprint section, padded to 4 bytes.
local version, fp_len, bands_n, fp_bytes, fp_at = 0, 0, 0, 0, 0
if #rec >= 32 then version, fp_len = struct.unpack('<I4I4', rec) end
if version == 2 and #rec >= 36 then
  bands_n, fp_bytes, fp_at = struct.unpack('<I4', rec, 17), struct.unpack('<I4', rec, 33), 36
elseif version == 1 then
  bands_n, fp_bytes, fp_at = struct.unpack('<I4', rec, 17), 4 * fp_len, 32
else
  return {handle, rec, -2}
end
local bands_at = fp_at + fp_bytes + (4 - fp_bytes % 4) % 4
-- Short band keys (records.SHORT_KEYS, the bands word's top bit): each key's top half,
-- then each key's low word; else whole keys of 8 bytes.
local short_keys = bands_n >= 2147483648
if short_keys then bands_n = bands_n - 2147483648 end
local key_bytes = short_keys and 6 or 8
if bands_n == 0 or bands_at + key_bytes * bands_n > #rec then return {handle, rec, -2} end
-- A document whose band keys never shared a field with another's has no candidate:
-- its bit answers for its buckets (most documents of a corpus; band_ops.lua marks).
local marks = ARGV[13] or ''
if marks ~= '' and redis.call('GETBIT', marks, handle) == 0 then return {handle, rec, 0, 0, 0} end
-- A band key's bucket is its top `bits` bits (at most 32: the top four bytes of the
-- little-endian field, a number Lua's doubles hold exactly), in `digits` hex digits;
-- its HASH's whole name comes from one format (the head with its % doubled, the number,
-- then '}'): one string made a key, not three.
local scale = 2 ^ (32 - tonumber(ARGV[9]))
local name_fmt = string.gsub(hash_head, '%%', '%%%%') .. '%0' .. ARGV[10] .. 'x}'
-- With short anchor fields, a key that is an anchor's ((h * SPREAD) ^ SALT mod 2^64,
-- h of 32 bits: Layout.field) has the field h, 4 bytes: the key unsalted, times
-- SPREAD's inverse mod 2^64, in 16-bit limbs (every sum below 2^36: exact in Lua's
-- doubles), is h when its top half is 0. A band key is one with odds of 2^-32.
local short = ARGV[11] == '1'
local low = ARGV[11] == '2' and tonumber(ARGV[12] or '4')
local function field_of(key)
  if low then return string.sub(key, 1, low) end
  if not short then return key end
  local a, c = {struct.unpack('<I2I2I2I2', key)}, ANCHOR_UNSPREAD_LIMBS
  for i = 1, 4 do a[i] = bit.bxor(a[i], ANCHOR_SALT_LIMBS[i]) end
  local r0 = a[1] * c[1]
  local r1 = a[1] * c[2] + a[2] * c[1] + math.floor(r0 / 65536)
  local r2 = a[1] * c[3] + a[2] * c[2] + a[3] * c[1] + math.floor(r1 / 65536)
  local r3 = a[1] * c[4] + a[2] * c[3] + a[3] * c[2] + a[4] * c[1] + math.floor(r2 / 65536)
  if r2 % 65536 ~= 0 or r3 % 65536 ~= 0 then return key end
  return struct.pack('<I2I2', r0 % 65536, r1 % 65536)
end
local bands = {}
local floor, format, sub, unpack_at = math.floor, string.format, string.sub, struct.unpack
if short_keys and low == 2 then
  -- A key's top half (its bucket) and low word (its field) are read where they lie:
  -- no 8-byte key is made. (This loop is a fifth of the script's time.)
  local lows = bands_at + 4 * bands_n
  for i = 0, bands_n - 1 do
    bands[2 * i + 1] = format(name_fmt, floor(unpack_at('<I4', rec, bands_at + 4 * i + 1) / scale))
    bands[2 * i + 2] = sub(rec, lows + 2 * i + 1, lows + 2 * i + 2)
  end
else
  for i = 0, bands_n - 1 do
    local key
    if short_keys then  -- as 8 bytes: its low word, two zero bytes, its top half
      local top_at, low_at = bands_at + 4 * i, bands_at + 4 * bands_n + 2 * i
      key = sub(rec, low_at + 1, low_at + 2) .. '\0\0' .. sub(rec, top_at + 1, top_at + 4)
    else
      local at = bands_at + 8 * i
      key = sub(rec, at + 1, at + 8)
    end
    bands[2 * i + 1] = format(name_fmt, floor(unpack_at('<I4', key, 5) / scale))
    bands[2 * i + 2] = field_of(key)
  end
end
local exclude, cap, budget = tonumber(handle), tonumber(ARGV[6]), tonumber(ARGV[7])
local hot_most = tonumber(ARGV[8])
local reply_head = {handle, rec}
local function hot_exit() return {handle, rec, -1} end
