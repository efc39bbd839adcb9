-- Release a write lock only while it still holds this writer's token: a lock
-- that expired may belong to another writer by now.
-- KEYS[1] the lock; ARGV[1] the token. Returns 1 when it was still held.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
