-- The ranking half of a query script, appended to a prelude (candidates.lua,
-- similar_by_id.lua; scripts/__init__.py joins them) that has set: doc_head,
-- hash_head, spill_head, exclude, cap, budget, hot_most; bands, a flat list of bucket
-- HASH and field per band key; reply_head, what the reply starts with; and hot_exit(),
-- the reply when the hot keys' members to read are more than hot_most.
local hits, seen = {}, {}
-- Every key's inline handles (counted once per key that has them), and each hot
-- key's set and size.
local hot = {}
-- The query's own handle as a field holds it (false when there is none to leave out):
-- most of a stored document's keys hold it alone, and it is left out below, so such a
-- field is passed over whole.
local own = exclude > 0 and struct.pack(HANDLE, exclude)
for i = 1, #bands, 2 do
  local bucket, field = bands[i], bands[i + 1]
  local v = redis.call('HGET', bucket, field)
  if v and v ~= own then
    if string.sub(v, 1, #SPILLED) == SPILLED then
      local spill = spill_head .. string.sub(bucket, #hash_head + 1) .. field
      hot[#hot + 1] = {spill, (struct.unpack(HANDLE, v, #SPILLED + 1))}
    else
      for j = 1, #v, HANDLE_BYTES do
        local h = struct.unpack(HANDLE, v, j)
        local n = hits[h]
        if n then hits[h] = n + 1 else hits[h] = 1; seen[#seen + 1] = h end
      end
    end
  end
end
-- The hot keys' members: all of them within the budget, else each key's share
-- (candidates.hot_shares: smallest keys first, what they leave going to larger ones) from
-- a staggered start, so keys with the same members still give different ones.
local cut = 0
if #hot > 0 then
  local total, most = 0, 0
  for _, b in ipairs(hot) do
    total = total + b[2]
    if b[2] > most then most = b[2] end
  end
  local counts, starts = {}, {}
  if total <= budget then
    for j, b in ipairs(hot) do counts[j], starts[j] = b[2], 0 end
  else
    local order = {}
    for j = 1, #hot do order[j] = j end
    table.sort(order, function(a, b)
      if hot[a][2] ~= hot[b][2] then return hot[a][2] < hot[b][2] end
      return a < b  -- Python's sort is stable
    end)
    local left = budget
    for k, j in ipairs(order) do
      local n = math.max(1, math.min(hot[j][2], most, math.floor(left / (#hot - k + 1))))
      counts[j], left = n, left - n
    end
    for j, b in ipairs(hot) do
      local s, n = b[2], counts[j]
      starts[j] = ((j - 1) * n) % (s - n + 1)
      if s > n then cut = cut + 1 end
    end
  end
  local reading = 0
  for j = 1, #hot do reading = reading + counts[j] end
  if reading > hot_most then return hot_exit() end
  -- A spill head ending in PACKED_HEAD: the hot keys' handles are packed STRINGs.
  local packed = string.sub(spill_head, -#PACKED_HEAD) == PACKED_HEAD
  for j, b in ipairs(hot) do
    local members
    if packed then
      local at = starts[j] * HANDLE_BYTES
      local raw = redis.call('GETRANGE', b[1], at, at + counts[j] * HANDLE_BYTES - 1)
      members = {}
      for i = 1, #raw - HANDLE_BYTES + 1, HANDLE_BYTES do
        members[#members + 1] = struct.unpack(HANDLE, raw, i)
      end
    else
      members = redis.call('ZRANGE', b[1], starts[j], starts[j] + counts[j] - 1)
    end
    for k = 1, #members do
      local h = tonumber(members[k])
      local n = hits[h]
      if n then hits[h] = n + 1 else hits[h] = 1; seen[#seen + 1] = h end
    end
  end
end
-- Leave out the query's own handle; over the cap, keep those sharing the most
-- keys, older (smaller handles) first among equals; answer in handle order.
local list = {}
for _, h in ipairs(seen) do
  if h ~= exclude then list[#list + 1] = h end
end
local capped = cut > 0
if #list > cap then
  -- One number per handle that sorts as (hits descending, handle ascending): a sort
  -- with Lua's own comparison, several times faster than one calling a function.
  -- Exact while hits < 2^20 (keys per query) and handles < HANDLES (2^32).
  local most = 0
  for _, h in ipairs(list) do
    if hits[h] > most then most = hits[h] end
  end
  for j, h in ipairs(list) do list[j] = (most - hits[h]) * HANDLES + h end
  table.sort(list)
  for j = #list, cap + 1, -1 do list[j] = nil end
  for j, v in ipairs(list) do list[j] = v % HANDLES end
  capped = true
end
table.sort(list)
-- After what the prelude put first (reply_head), as candidates.lua describes.
local reply, at = reply_head, #reply_head
reply[at + 1], reply[at + 2], reply[at + 3] = capped and 1 or 0, cut, #list
at = at + 3
for j = 1, #list do reply[at + j] = list[j] end
-- The records, MGET a slice at a time (unpack has a limit on its arguments).
for j = 1, #list, 1000 do
  local keys = {}
  for k = j, math.min(j + 999, #list) do keys[#keys + 1] = doc_head .. list[k] end
  local got = redis.call('MGET', unpack(keys))
  for k = 1, #keys do reply[at + #list + j + k - 1] = got[k] end
end
return reply
