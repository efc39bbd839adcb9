-- Release a write lock (lock_ops.lua's release).
-- KEYS[1] the lock; ARGV[1] the token. Returns 1 when it was still held.
return release(KEYS[1], ARGV[1])
