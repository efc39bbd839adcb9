-- The one add and one remove of a (handle, band key) entry, shared by the one-entry
-- scripts (band_add.lua, band_remove.lua: a cluster, one call per entry, keys in KEYS)
-- and the many-entry ones (band_add_many.lua, band_remove_many.lua: a single server);
-- scripts/__init__.py puts it before each of them, after the constants' preamble.
-- A band's field holds its handles inline (HANDLE_BYTES each) until there are more
-- than `most` bytes of them; then all move to the band's spill key and the field holds
-- SPILLED and the spill's size, so one lookup tells a query how large every hot band
-- is. The spill is a sorted set scored by handle, or with `packed` (collections made
-- since packed spills) a STRING of the handles ascending, HANDLE_BYTES each.

-- A band's spill key from its bucket HASH and field, for the many-entry scripts, which
-- name keys themselves (band_entries.lua sets it): they make the name only for a band
-- that spills, one string fewer an entry.
local spill_of

-- Where handle h is, or would go, among n ascending handles, handle_at(i) the one at
-- rank i (from 0): the first rank whose handle is >= h (n if none), and whether it is h.
local function rank_of(n, h, handle_at)
  local lo, hi = 0, n
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if handle_at(mid) < h then lo = mid + 1 else hi = mid end
  end
  return lo, lo < n and handle_at(lo) == h
end

-- rank_of among the first n handles of a packed spill, read 4 bytes a probe.
local function packed_find(spill, n, h)
  return rank_of(n, h, function(i)
    local at = i * HANDLE_BYTES
    return (struct.unpack(HANDLE, redis.call('GETRANGE', spill, at, at + HANDLE_BYTES - 1)))
  end)
end

-- Handles read from a packed spill's end in one GETRANGE when an add is not the
-- newest: another writer's batches (500 documents each) are ahead of it, seldom more.
local WINDOW = 1024

-- Add handle (packed) to a packed spill: how many handles it holds then, or 0 when
-- the handle was there. Handles mostly arrive ascending, so the last is read first and
-- an add after it is one SETRANGE at the end; else it is placed by a binary search of
-- the window before the end (of the rest, when older), and only the handles after it
-- move. The string's own length counts its handles (the band's field follows it).
local function packed_add(spill, handle)
  local h = struct.unpack(HANDLE, handle)
  local n = math.floor(redis.call('STRLEN', spill) / HANDLE_BYTES)
  if n == 0 then
    redis.call('SET', spill, handle)
    return 1
  end
  local tip = redis.call('GETRANGE', spill, (n - 1) * HANDLE_BYTES, n * HANDLE_BYTES - 1)
  local last = struct.unpack(HANDLE, tip)
  if h == last then return 0 end
  if h > last then
    redis.call('SETRANGE', spill, n * HANDLE_BYTES, handle)
    return n + 1
  end
  local first = math.max(0, n - WINDOW)
  local raw = redis.call('GETRANGE', spill, first * HANDLE_BYTES, n * HANDLE_BYTES - 1)
  local lo, found = rank_of(n - first, h, function(i)
    return (struct.unpack(HANDLE, raw, i * HANDLE_BYTES + 1))
  end)
  if found then return 0 end
  local at, tail = first + lo, string.sub(raw, lo * HANDLE_BYTES + 1)
  if lo == 0 and first > 0 then  -- older than the whole window: search the rest
    local there
    at, there = packed_find(spill, first, h)
    if there then return 0 end
    tail = redis.call('GETRANGE', spill, at * HANDLE_BYTES, n * HANDLE_BYTES - 1)
  end
  redis.call('SETRANGE', spill, at * HANDLE_BYTES, handle .. tail)
  return n + 1
end

-- A band's inline handles and one more, packed ascending: the band's first packed spill.
local function packed_of(v, handle)
  local hs = {(struct.unpack(HANDLE, handle))}
  for i = 1, #v, HANDLE_BYTES do hs[#hs + 1] = (struct.unpack(HANDLE, v, i)) end
  table.sort(hs)
  local parts = {}
  for k, h in ipairs(hs) do parts[k] = struct.pack(HANDLE, h) end
  return table.concat(parts), #hs
end

-- Add each handle (packed) of a band's inline value v to marked.
local function mark_holders(marked, v)
  for i = 1, #v, HANDLE_BYTES do marked[#marked + 1] = string.sub(v, i, i + HANDLE_BYTES - 1) end
end

-- Add handle (packed) to the band at field of bucket (spill: its spill key, or nil
-- for spill_of's); 1 when
-- it was not there yet. marked (nil: the collection keeps no marks) collects the handles
-- (packed) that now share a band key with another document: with band true (the entry
-- is a band key, not an anchor), the joiner and every inline holder when the band has
-- another holder, the joiner alone when it is spilled; whatever joins, every holder a
-- band had when it spills. So every member of a spilled band is marked, and no band key
-- shares its field with another document unmarked (app/store/layout.py, `M`).
local function band_add(bucket, spill, field, handle, most, packed, marked, band)
  -- Read first: the store sends here the entries whose native HSETNX found the field
  -- taken, so a field that is missing (removed since) is the rare case.
  local v = redis.call('HGET', bucket, field)
  if not v then
    redis.call('HSET', bucket, field, handle)
    return 1
  end
  local spilled = string.sub(v, 1, #SPILLED) == SPILLED
  if not spilled then
    local there = false
    for i = 1, #v, HANDLE_BYTES do
      if string.sub(v, i, i + HANDLE_BYTES - 1) == handle then there = true break end
    end
    -- Marked before an entry that is there already returns: its field may have gained
    -- other holders through anchors, which mark nothing.
    if marked and band and (#v > HANDLE_BYTES or not there) then
      mark_holders(marked, v)
      if not there then marked[#marked + 1] = handle end
    end
    if there then return 0 end
    if #v < most then
      redis.call('HSET', bucket, field, v .. handle)
      return 1
    end
    if marked and not band then  -- spilling: every holder, and the joiner
      mark_holders(marked, v)
      marked[#marked + 1] = handle
    end
    spill = spill or spill_of(bucket, field)
    if packed then
      local all, n = packed_of(v, handle)
      redis.call('SET', spill, all)
      redis.call('HSET', bucket, field, SPILLED .. struct.pack(HANDLE, n))
      return 1
    end
    for i = 1, #v, HANDLE_BYTES do
      local h = struct.unpack(HANDLE, v, i)
      redis.call('ZADD', spill, h, h)
    end
  else
    if marked and band then marked[#marked + 1] = handle end
    spill = spill or spill_of(bucket, field)
    if packed then
      local size = packed_add(spill, handle)
      if size == 0 then return 0 end
      redis.call('HSET', bucket, field, SPILLED .. struct.pack(HANDLE, size))
      return 1
    end
  end
  local h = struct.unpack(HANDLE, handle)  -- one value: unpack also returns a position
  local added = redis.call('ZADD', spill, h, h)
  redis.call('HSET', bucket, field, SPILLED .. struct.pack(HANDLE, redis.call('ZCARD', spill)))
  return added
end

-- Set the bit of each marked handle (packed) in the bitmap marks: each distinct one once
-- (a document that shares many band keys with another is marked by each), in BITFIELD
-- calls of many bits (SETBIT's numbering: bit h counted from each byte's highest).
local MARKS_PER_CALL = 512
local function set_marks(marks, marked)
  local done, args = {}, {}
  for _, handle in ipairs(marked) do
    if not done[handle] then
      done[handle] = true
      local n = #args
      args[n + 1], args[n + 2], args[n + 3], args[n + 4] = 'SET', 'u1', (struct.unpack(HANDLE, handle)), 1
      if n + 4 >= 4 * MARKS_PER_CALL then
        redis.call('BITFIELD', marks, unpack(args))
        args = {}
      end
    end
  end
  if #args > 0 then redis.call('BITFIELD', marks, unpack(args)) end
end

-- Remove handle h from a packed spill, as ZREM and ZCARD do from a sorted set: 1 when it
-- was there (else 0), and how many are left. The string is written anew without it:
-- exactly its handles, always.
local function packed_remove(spill, h)
  local n = math.floor(redis.call('STRLEN', spill) / HANDLE_BYTES)
  if n == 0 then return 0, 0 end
  local at, there = packed_find(spill, n, h)
  if not there then return 0, n end
  local rest = ''
  if at > 0 then rest = redis.call('GETRANGE', spill, 0, at * HANDLE_BYTES - 1) end
  if at < n - 1 then
    rest = rest .. redis.call('GETRANGE', spill, (at + 1) * HANDLE_BYTES, n * HANDLE_BYTES - 1)
  end
  if n > 1 then redis.call('SET', spill, rest) else redis.call('DEL', spill) end
  return 1, n - 1
end

-- Remove handle (packed) from the band, inline or spilled; a band left empty loses its
-- field, and a spilled band's field keeps its spill's size. 1 when it was there.
local function band_remove(bucket, spill, field, handle, packed)
  local v = redis.call('HGET', bucket, field)
  if not v then return 0 end
  if string.sub(v, 1, #SPILLED) == SPILLED then
    spill = spill or spill_of(bucket, field)
    local h = struct.unpack(HANDLE, handle)
    local removed, left
    if packed then
      removed, left = packed_remove(spill, h)
    else
      removed = redis.call('ZREM', spill, h)
      left = redis.call('ZCARD', spill)
    end
    if left == 0 then redis.call('HDEL', bucket, field)
    else redis.call('HSET', bucket, field, SPILLED .. struct.pack(HANDLE, left)) end
    return removed
  end
  for i = 1, #v, HANDLE_BYTES do
    if string.sub(v, i, i + HANDLE_BYTES - 1) == handle then
      local rest = string.sub(v, 1, i - 1) .. string.sub(v, i + HANDLE_BYTES)
      if #rest == 0 then redis.call('HDEL', bucket, field)
      else redis.call('HSET', bucket, field, rest) end
      return 1
    end
  end
  return 0
end
