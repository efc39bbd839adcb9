-- Drop an id's mapping only while it still points at this handle: a writer
-- that has since given the id a new handle keeps it. Returns 1 when it dropped it
-- (the caller moves the id buckets' kept count by what was dropped).
-- KEYS[1] the id's HASH (the ids HASH, or its id bucket: Layout.id_key); ARGV[1] the id, ARGV[2] the handle (decimal).
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
