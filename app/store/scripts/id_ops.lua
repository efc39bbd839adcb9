-- The one unmapping of an id, shared by forget_id.lua (one id, its HASH in KEYS: a
-- cluster, or a collection with one ids HASH) and ids_forget.lua (many, one server);
-- scripts/__init__.py puts it before each of them, after the constants' preamble.

-- Drop the id from hash only while it still maps to handle (decimal): a writer that has
-- since given the id a new handle keeps it. 1 when it dropped it, else 0.
local function forget_id(hash, id, handle)
  if redis.call('HGET', hash, id) == handle then return redis.call('HDEL', hash, id) end
  return 0
end

