-- The one release of a write lock, shared by unlock.lua (one lock, in KEYS: a cluster)
-- and unlock_many.lua (many, named in ARGV: a single server); scripts/__init__.py puts
-- it before each of them.
-- Release lock only while it still holds this writer's token (a lock that expired may
-- belong to another writer by now): 1 when it was still held, else 0.
local function release(lock, token)
  if redis.call('GET', lock) == token then return redis.call('DEL', lock) end
  return 0
end
