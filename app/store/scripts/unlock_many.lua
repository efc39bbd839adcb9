-- Release many write locks in one call, each as unlock.lua releases one (lock_ops.lua's
-- release). Single server only: the locks are of many slots, named in its arguments.
-- ARGV[1] the token, then the locks. Returns, for each lock, 1 when it was still held.
local out = {}
for i = 2, #ARGV do out[i - 1] = release(ARGV[i], ARGV[1]) end
return out
