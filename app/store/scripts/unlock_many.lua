-- Release many write locks in one call, each as unlock.lua releases one: only while it
-- still holds this writer's token. Single server only: the locks are of many slots,
-- named in its arguments.
-- ARGV[1] the token, then the locks. Returns, for each lock, 1 when it was still held.
local token, out = ARGV[1], {}
for i = 2, #ARGV do
  local held = 0
  if redis.call('GET', ARGV[i]) == token then held = redis.call('DEL', ARGV[i]) end
  out[i - 1] = held
end
return out
